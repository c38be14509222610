/**
 * Live Activity push tokens stay with the phone that registered them, every token the PUT accepts can
 * be deleted, and no token, credential or pairing code reaches an access-log line (issue 12, item 7).
 * The full relay app on an ephemeral port; APNs recorded at its seam.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { paired, ROOMY_BUDGETS, startRelay, testDatabase, type Relay } from './support/harness.js';

let db: { url: string; release: () => Promise<void> };
let relay: Relay;

beforeAll(async () => {
  db = await testDatabase('sqlite');
  relay = await startRelay(db.url, ROOMY_BUDGETS);
});
afterAll(async () => {
  await relay.close();
  await db.release();
});
beforeEach(() => relay.apns.reset());

const hexToken = (chars: number): string =>
  randomBytes(Math.ceil(chars / 2))
    .toString('hex')
    .slice(0, chars);

const progress = { session_id: 'sess-victim', phase: 'tool', tool_category: 'terminal', tool_count: 1, started_at: 1 };

async function registerActivity(auth: { authorization: string }, pushToken: string, sessionIds = ['sess-victim']) {
  return relay.client.PUT('/v1/live-activities', {
    headers: auth,
    body: { push_token: pushToken, session_ids: sessionIds },
  });
}

async function report(auth: { authorization: string }, body: Record<string, unknown> = progress) {
  return relay.client.POST('/v1/live-activities/progress', { headers: auth, body: body as never });
}

describe('Live Activity token ownership', () => {
  it('a token another installation registered is refused 409 live_activity_token_in_use and stays with its owner', async () => {
    const victim = await paired(relay);
    const attacker = await paired(relay);
    const token = hexToken(64);
    expect((await registerActivity(victim.deviceAuth, token)).response.status).toBe(200);

    // The attacker learned the token and registers it under the same session id on their installation.
    const stolen = await registerActivity(attacker.deviceAuth, token);
    expect(stolen.response.status).toBe(409);
    expect(stolen.error).toEqual({ error: 'live_activity_token_in_use' });

    // The attacker's host cannot drive the victim's Lock Screen…
    const hijack = await report(attacker.gatewayAuth);
    expect(hijack.data).toEqual({ watching: false, sent: 0 });
    expect(relay.apns.sent).toEqual([]);
    // …and the victim's own host still does.
    const own = await report(victim.gatewayAuth);
    expect(own.data).toEqual({ watching: true, sent: 1 });
    expect(relay.apns.sent.map((push) => push.deviceToken)).toEqual([token]);

    // The owner re-registering its own token is not a conflict.
    expect((await registerActivity(victim.deviceAuth, token, ['sess-victim', 'sess-2'])).response.status).toBe(200);
    // Once the owner deletes it, the token is free again.
    const removed = await relay.client.DELETE('/v1/live-activities/{push_token}', {
      params: { path: { push_token: token } },
      headers: victim.deviceAuth,
    });
    expect(removed.response.status).toBe(204);
    expect((await registerActivity(attacker.deviceAuth, token)).response.status).toBe(200);
  });

  it('every token length the PUT accepts (64–200 hex) can be DELETEd', async () => {
    const phone = await paired(relay);
    for (const length of [64, 100, 101, 160, 200]) {
      const token = hexToken(length);
      expect((await registerActivity(phone.deviceAuth, token)).response.status).toBe(200);
      const removed = await relay.client.DELETE('/v1/live-activities/{push_token}', {
        params: { path: { push_token: token } },
        headers: phone.deviceAuth,
      });
      expect(removed.response.status, `${length} hex`).toBe(204);
      expect((await report(phone.gatewayAuth)).data, `${length} hex`).toEqual({ watching: false, sent: 0 });
    }
  });
});

describe('access-log lines carry no secrets', () => {
  /** Sends a raw request and waits for its access-log line (the first line written after it was sent). */
  async function loggedPathOf(method: string, path: string, headers: Record<string, string> = {}): Promise<string> {
    const before = relay.accessLog.length;
    const response = await fetch(`${relay.baseUrl}${path}`, { method, headers });
    await response.arrayBuffer();
    const line = await relay.accessLogLine(
      (entry) =>
        relay.accessLog.indexOf(entry) >= before && entry.method === method && entry.status === response.status,
    );
    return String(line.path);
  }

  it('push tokens, credentials, device tokens and pairing codes in a path are redacted; relay ids stay', async () => {
    const phone = await paired(relay);
    const pushToken = hexToken(200);
    await registerActivity(phone.deviceAuth, pushToken);
    const credential = phone.deviceAuth.authorization.replace('Bearer ', '');
    const secret = credential.split('.')[1] ?? '';
    const gatewaySecret = phone.gatewayAuth.authorization.split('.').at(-1) ?? '';
    const pairingCode = 'ABCDE-FGHJK';
    const deviceToken = hexToken(64);

    const paths = {
      liveActivityDelete: await loggedPathOf('DELETE', `/v1/live-activities/${pushToken}`, phone.deviceAuth),
      credentialInPath: await loggedPathOf('GET', `/v1/installations/${credential}`),
      secretPercentEncoded: await loggedPathOf(
        'GET',
        `/v1/x/${[...secret].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}`,
      ),
      gatewaySecret: await loggedPathOf('POST', `/v1/gateways/${gatewaySecret}?token=${gatewaySecret}`),
      pairingCode: await loggedPathOf('GET', `/v1/pairings/${pairingCode}`),
      pairingCodeLowercase: await loggedPathOf('GET', `/v1/pairings/claim/${pairingCode.toLowerCase()}`),
      deviceToken: await loggedPathOf('PUT', `/v1/devices/${deviceToken}`),
      installation: await loggedPathOf('PUT', `/v1/installations/${phone.phone.id}`, phone.deviceAuth),
    };
    expect(paths).toEqual({
      liveActivityDelete: '/v1/live-activities/:redacted',
      credentialInPath: '/v1/installations/:redacted',
      secretPercentEncoded: '/v1/x/:redacted',
      gatewaySecret: '/v1/gateways/:redacted',
      pairingCode: '/v1/pairings/:redacted',
      pairingCodeLowercase: '/v1/pairings/claim/:redacted',
      deviceToken: '/v1/devices/:redacted',
      // The installation id is not a secret (the credential's secret half is) and stays useful.
      installation: `/v1/installations/${phone.phone.id}`,
    });
    const everything = JSON.stringify(relay.accessLog);
    for (const value of [pushToken, secret, gatewaySecret, pairingCode, deviceToken]) {
      expect(everything).not.toContain(value);
    }
    expect(everything).not.toContain(pairingCode.toLowerCase());
    expect(everything).toContain(phone.phone.id);
  });
});
