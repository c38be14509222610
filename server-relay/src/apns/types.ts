/**
 * The APNs transport as the relay core sees it: one `send` per device token, a result that says
 * whether Apple took the notification, and an exception only when Apple could not be reached.
 * Implementations: the HTTP/2 provider client (`http2-sender.ts`) and the operator test seams
 * (`seam-sender.ts`, APNS_MODE / APNS_CAPTURE_PATH). `createApnsSender` in `index.ts` picks one.
 */

/** The `apns-push-type` header values the relay sends. */
export type ApnsPushType = 'alert' | 'voip' | 'background' | 'location' | 'liveactivity';

/** One notification for one device token. */
export interface ApnsNotification {
  /** The JSON payload (`{aps, …}`), sent as the request body verbatim. */
  payload: Record<string, unknown>;
  /** `apns-collapse-id`; at most 64 bytes (APNs rejects longer ones, so the sender refuses them first). */
  collapseId?: string;
  /** The `thread-id` the payload already carries; kept for the capture log and callers' bookkeeping. */
  threadId?: string;
  /** `apns-push-type`; default `alert`. */
  pushType?: ApnsPushType;
  /** `apns-topic`; default the configured APNS_TOPIC (VoIP pushes pass `<topic>.voip`). */
  topic?: string;
  /** `apns-expiration` in UNIX seconds; omitted when undefined (APNs then tries once). */
  expiration?: number;
  /** `apns-priority`; default 10 (5 for background pushes, which APNs refuses at 10). */
  priority?: 1 | 5 | 10;
}

/** What APNs answered. `ok` is `status === 200`; `reason` is the `reason` of APNs' JSON error body. */
export interface ApnsResult {
  ok: boolean;
  status: number;
  reason?: string;
}

export interface ApnsSender {
  /**
   * Sends one notification. Resolves with APNs' answer (also for refusals such as 410 Unregistered);
   * rejects only when no answer arrived (connection refused or dropped, TLS failure, timeout).
   */
  send(deviceToken: string, notification: ApnsNotification): Promise<ApnsResult>;
  /** Closes pooled connections and the capture file. Idempotent. */
  close(): Promise<void>;
}

/** The operator test seam of APNS_MODE. */
export type ApnsSeamMode = 'accept' | 'reject' | 'throw';

/** Options of `createApnsSender`; `apnsOptionsFromEnv` reads them from APNS_* variables. */
export interface ApnsOptions {
  /** APNS_TOPIC: the iPhone app's bundle id, the default `apns-topic`. */
  topic: string;
  /** APNS_MODE: answer locally instead of calling Apple (accept 200; reject 403 InvalidProviderToken; throw). */
  mode?: ApnsSeamMode;
  /** APNS_CAPTURE_PATH: append every send as one JSON line (file mode 0600). Implies `accept` without APNS_MODE. */
  capturePath?: string;
  /** APNS_VOIP_FAILURE: refuse VoIP sends with this reason (`Unregistered` ⇒ 410, else 400), or `throw`. */
  voipFailure?: string;
  /** APNS_VOIP_FAILURE_TOPIC: limit APNS_VOIP_FAILURE to VoIP sends to this topic. */
  voipFailureTopic?: string;
  /** The provider credentials; required unless a seam (mode or capture) answers locally. */
  provider?: ApnsProviderOptions;
}

export interface ApnsProviderOptions {
  /** The .p8 signing key (PKCS#8 PEM of a P-256 key). */
  keyPem: string;
  /** APNS_KEY_ID: the JWT `kid`. */
  keyId: string;
  /** APNS_TEAM_ID: the JWT `iss`. */
  teamId: string;
  /** APNS_ORIGIN: `https://api.push.apple.com` unless overridden (https only). */
  origin: string;
  /** Per-request timeout; 10 s as in the reference. */
  timeoutMs?: number;
  /** Extra TLS trust for a local simulator (PEM). Never set in production. */
  ca?: string | Buffer;
  /** Clock for the JWT `iat` and its cache, in ms since the epoch. */
  now?: () => number;
}
