import type { ApnsNotification, ApnsResult, ApnsSeamMode, ApnsSender } from './types.js';

/**
 * The APNS_MODE seam: answers locally instead of calling Apple. accept → 200; reject → 403
 * InvalidProviderToken (what a relay with a wrong key gets for every push); throw → a
 * network-style failure.
 */
export class SeamSender implements ApnsSender {
  constructor(private readonly mode: ApnsSeamMode) {}

  send(_deviceToken: string, _notification: ApnsNotification): Promise<ApnsResult> {
    if (this.mode === 'throw') return Promise.reject(new Error('APNS_MODE=throw: simulated APNs network failure'));
    if (this.mode === 'reject') return Promise.resolve({ ok: false, status: 403, reason: 'InvalidProviderToken' });
    return Promise.resolve({ ok: true, status: 200 });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
