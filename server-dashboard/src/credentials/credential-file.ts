import { z } from 'zod';
import { e2eKeyRecord, type E2eKeyRecord } from '@conduit/contracts/crypto/e2e';

/** The reference plugin's default relay; used when the file names none. */
export const DEFAULT_RELAY_URL = 'https://push.milim.dev';
export const CREDENTIAL_FILE_NAME = 'conduit-push.json';

/**
 * `<profile home>/conduit-push.json` (EVENTS.md §7), the file the reference Python plugin writes, so
 * a profile paired by either can be used by the other. Unknown keys are kept (loose object), so a
 * write never drops what a newer or older writer stored.
 */
export const credentialFile = z.looseObject({
  /** `<installation_id>.<gateway_id>.<secret>`; never logged or printed. */
  credential: z.string().optional(),
  installation_id: z.string().optional(),
  gateway_id: z.string().optional(),
  gateway_name: z.string().optional(),
  relay_url: z.string().optional(),
  /** `redact on`: events leave with no title/body and generic card text. Read at send time. */
  redact_content: z.boolean().optional(),
  /** 64 hex characters used as an HMAC key to re-key redacted event ids; never leaves the host. */
  redact_key: z.string().optional(),
  /**
   * The phone-provisioned E2E key. Kept as unknown here on purpose: a present but malformed record
   * still means "this pairing is encrypted", and the send path must then go out content-free rather
   * than fall back to plaintext (EVENTS.md §3), so it is interpreted by `e2eState`, not rejected.
   */
  e2e: z.unknown().optional(),
});
export type CredentialFile = z.infer<typeof credentialFile>;

/** A file whose `credential` is set: the profile is paired. */
export type PairedCredentials = CredentialFile & {
  credential: string;
};

export function isPaired(file: CredentialFile | null): file is PairedCredentials {
  return file !== null && typeof file.credential === 'string' && file.credential.length > 0;
}

/**
 * The E2E state of a pairing:
 * - `off`: no key was provisioned; events go out in plaintext (or redacted);
 * - `on`: a usable key bound to this pairing;
 * - `broken`: a record is present but cannot seal for this pairing (malformed, or provisioned for
 *   another phone or gateway); events go out content-free, never in plaintext.
 */
export type E2eState = { state: 'off' } | { state: 'on'; record: E2eKeyRecord } | { state: 'broken'; reason: string };

export function e2eState(file: CredentialFile): E2eState {
  if (file.e2e === undefined || file.e2e === null) return { state: 'off' };
  const parsed = e2eKeyRecord.safeParse(file.e2e);
  if (!parsed.success) return { state: 'broken', reason: 'the stored key is malformed' };
  const record = parsed.data;
  if (
    (record.installation_id !== undefined && record.installation_id !== file.installation_id) ||
    (record.gateway_id !== undefined && record.gateway_id !== file.gateway_id)
  ) {
    return { state: 'broken', reason: 'the stored key belongs to another pairing' };
  }
  return { state: 'on', record };
}

/** The relay this pairing talks to, without a trailing slash. */
export function relayUrlOf(file: CredentialFile): string {
  return (file.relay_url?.trim() || DEFAULT_RELAY_URL).replace(/\/+$/, '');
}
