import type { ApnsNotification, ApnsResult, ApnsSender } from '../../src/apns/types.js';

/**
 * An in-process stand-in for APNs at the ApnsSender seam: records every send and answers with a
 * scripted result (default 200), or throws like an unreachable APNs. The HTTP/2 wire itself is
 * covered by the apns tests against the local simulator.
 */
export class RecordingApns implements ApnsSender {
  readonly sent: { deviceToken: string; notification: ApnsNotification }[] = [];
  private readonly script: ((token: string, n: ApnsNotification) => ApnsResult | 'throw' | undefined)[] = [];

  /** Answers the next matching sends (first matching rule wins; a rule returning undefined passes). */
  answer(rule: (token: string, notification: ApnsNotification) => ApnsResult | 'throw' | undefined): void {
    this.script.push(rule);
  }

  reset(): void {
    this.sent.length = 0;
    this.script.length = 0;
  }

  async send(deviceToken: string, notification: ApnsNotification): Promise<ApnsResult> {
    this.sent.push({ deviceToken, notification: structuredClone(notification) });
    for (const rule of this.script) {
      const result = rule(deviceToken, notification);
      if (result === 'throw') throw new Error('simulated network failure');
      if (result) return result;
    }
    return { ok: true, status: 200 };
  }

  async close(): Promise<void> {}
}
