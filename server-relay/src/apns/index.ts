import { CapturingSender } from './capture-log.js';
import { Http2ApnsSender } from './http2-sender.js';
import { ApnsConfigError } from './options.js';
import { SeamSender } from './seam-sender.js';
import type { ApnsOptions, ApnsSender } from './types.js';
import { VoipFailureSender } from './voip-failure.js';

export type * from './types.js';
export { apnsOptionsFromEnv, ApnsConfigError, PRODUCTION_APNS_ORIGIN } from './options.js';
export { Http2ApnsSender, MAX_COLLAPSE_ID_BYTES } from './http2-sender.js';

/**
 * Builds the relay's APNs sender: the seams answer locally when APNS_MODE or APNS_CAPTURE_PATH is set
 * (capture alone means accept), otherwise the HTTP/2 provider client talks to APNS_ORIGIN.
 * APNS_VOIP_FAILURE wraps either; the capture log wraps everything and writes each push APNs took.
 * Throws ApnsConfigError when the provider key is missing or unusable.
 */
export function createApnsSender(options: ApnsOptions): ApnsSender {
  let sender: ApnsSender;
  if (options.mode !== undefined || options.capturePath !== undefined) {
    sender = new SeamSender(options.mode ?? 'accept');
  } else {
    if (!options.provider) throw new ApnsConfigError('APNS_KEY_PATH, APNS_KEY_ID and APNS_TEAM_ID are required.');
    try {
      sender = new Http2ApnsSender(options.provider, options.topic);
    } catch (error) {
      throw new ApnsConfigError(
        `APNS_KEY_PATH is not a usable APNs key: ${error instanceof Error ? error.message.split('\n')[0] : 'invalid'}`,
      );
    }
  }
  if (options.voipFailure !== undefined) {
    sender = new VoipFailureSender(sender, options.voipFailure, options.voipFailureTopic);
  }
  if (options.capturePath !== undefined) sender = new CapturingSender(sender, options.capturePath);
  return sender;
}
