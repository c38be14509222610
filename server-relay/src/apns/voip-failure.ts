import type { ApnsNotification, ApnsResult, ApnsSender } from './types.js';

/**
 * APNS_VOIP_FAILURE seam: VoIP sends (optionally only those to APNS_VOIP_FAILURE_TOPIC) are refused
 * with the configured reason — `Unregistered` as 410, any other reason as 400 — or fail with a
 * thrown error for `throw`. Lets client developers exercise the relay's fallback to an alert push
 * and its token clean-up without Apple. Every other send goes to the wrapped sender.
 */
export class VoipFailureSender implements ApnsSender {
  constructor(
    private readonly inner: ApnsSender,
    private readonly failure: string,
    private readonly onlyTopic?: string,
  ) {}

  async send(deviceToken: string, notification: ApnsNotification): Promise<ApnsResult> {
    const applies =
      notification.pushType === 'voip' && (this.onlyTopic === undefined || notification.topic === this.onlyTopic);
    if (!applies) return this.inner.send(deviceToken, notification);
    if (this.failure === 'throw') throw new Error('APNS_VOIP_FAILURE=throw: simulated VoIP push failure');
    return { ok: false, status: this.failure === 'Unregistered' ? 410 : 400, reason: this.failure };
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
