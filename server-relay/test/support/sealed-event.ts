import type { operations } from '@conduit/sdk/relay';

/** The body of POST /v1/events as the generated client types it. */
export type EventBody = operations['postEvent']['requestBody']['content']['application/json'];

/**
 * A well-formed sealed envelope (API.md §1.1) for the event `id`: the relay checks its shape and
 * that `msg` names the event, never what the ciphertext holds.
 */
export function sealedEnvelope(id: string, overrides: { tok?: string; ct?: string; z?: 0 | 1 } = {}) {
  return {
    v: 1 as const,
    kid: '0123456789abcdef0123456789abcdef',
    msg: id,
    iat: Math.floor(Date.now() / 1000),
    tok: overrides.tok ?? 'fedcba9876543210',
    z: overrides.z ?? 0,
    req: '',
    n: 'AAAAAAAAAAAAAAAA',
    ct: overrides.ct ?? 'C'.repeat(64),
  };
}
