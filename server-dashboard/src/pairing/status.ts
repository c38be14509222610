import { DEFAULT_RELAY_URL, e2eState, isPaired } from '../credentials/credential-file.js';
import { credentialPath, readCredentials } from '../credentials/credential-store.js';
import { keysFromRecord } from '../crypto/e2e-keys.js';

export const NOT_PAIRED = 'This Hermes profile is not paired with Conduit.';

/**
 * The lines `conduit push status` prints (CLI.md), or null when the profile is not paired. Never
 * includes the credential, the redact key or the E2E secret.
 */
export async function statusLines(home: string, hostname: string): Promise<string[] | null> {
  const file = await readCredentials(home);
  if (!isPaired(file)) return null;
  const state = e2eState(file);
  const keys = state.state === 'on' ? keysFromRecord(state.record) : null;
  // A present but unusable key is not "off": events then go out without any content (privacy.ts).
  const encryption =
    keys !== null
      ? `on (key ${keys.kid.slice(0, 8)}\u2026)`
      : state.state === 'off'
        ? 'off (open Conduit > Settings > Notifications to turn it on)'
        : "broken (the stored key can't be used, so notifications go out without content; open Conduit > Settings > Notifications to set it up again)";
  return [
    `Paired: ${file.gateway_name || hostname}`,
    `Relay: ${file.relay_url || DEFAULT_RELAY_URL}`,
    `Redact content: ${file.redact_content === true ? 'on' : 'off'}`,
    `End-to-end encryption: ${encryption}`,
    `State: ${credentialPath(home)}`,
  ];
}
