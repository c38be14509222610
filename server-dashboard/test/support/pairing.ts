import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const INSTALLATION_ID = '11111111-2222-4333-8444-555555555555';
export const GATEWAY_ID = '66666666-7777-4888-9999-aaaaaaaaaaaa';
export const CREDENTIAL = `${INSTALLATION_ID}.${GATEWAY_ID}.c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I`;

/** Writes a paired conduit-push.json as `conduit push pair` leaves it (mode 0600). */
export function writePairing(home: string, relayUrl: string, extra: Record<string, unknown> = {}): void {
  const file = path.join(home, 'conduit-push.json');
  writeFileSync(
    file,
    JSON.stringify({
      credential: CREDENTIAL,
      installation_id: INSTALLATION_ID,
      gateway_id: GATEWAY_ID,
      gateway_name: 'test Hermes',
      relay_url: relayUrl,
      ...extra,
    }) + '\n',
    { mode: 0o600 },
  );
  chmodSync(file, 0o600);
}
