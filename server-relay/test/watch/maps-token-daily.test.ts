/**
 * The relay's shared Apple Maps token is bounded per installation and per day (issue 12, item 10a):
 * an attacker registers a phone, pairs hosts of their own and asks for tokens. The full relay app on
 * an ephemeral port with a local stand-in for Apple's token endpoint.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerKeyPair } from '../apns/keys.js';
import { nextIp, paired, ROOMY_BUDGETS, startRelay, testDatabase, type Relay } from '../support/harness.js';
import { FakeAppleMaps } from './fake-apple-maps.js';

const PER_DAY = 3;
const DAY_MS = 24 * 60 * 60 * 1000;
const mapsKey = providerKeyPair();

let dir: string;
let db: { url: string; release: () => Promise<void> };
let apple: FakeAppleMaps;
let relay: Relay;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'relay-maps-'));
  const keyPath = path.join(dir, 'maps.p8');
  writeFileSync(keyPath, mapsKey.privatePem, { mode: 0o600 });
  apple = await FakeAppleMaps.start(mapsKey.publicPem, 'MAPSKEY123', 'TEAMID6789');
  db = await testDatabase('sqlite');
  relay = await startRelay(db.url, {
    ...ROOMY_BUDGETS,
    MAPS_KEY_ID: 'MAPSKEY123',
    MAPS_KEY_PATH: keyPath,
    APNS_TEAM_ID: 'TEAMID6789',
    MAPS_TOKEN_URL: apple.url,
    RELAY_MAPS_TOKENS_PER_INSTALLATION_PER_DAY: String(PER_DAY),
  });
});
afterAll(async () => {
  await relay.close();
  await apple.close();
  await db.release();
  rmSync(dir, { recursive: true, force: true });
});

const mint = (auth: { authorization: string }) => relay.client.POST('/v1/maps/token', { headers: auth });

/** Pairs one more host with an installation the test already holds (a profile re-paired, or a second machine). */
async function anotherHost(deviceAuth: { authorization: string }, installationId: string) {
  const pairing = await relay.client.POST('/v1/installations/{id}/pairings', {
    params: { path: { id: installationId } },
    headers: deviceAuth,
    body: {},
  });
  const claim = await relay.client.POST('/v1/pairings/claim', {
    headers: { 'x-forwarded-for': nextIp() },
    body: { pairing_code: pairing.data?.pairing_code ?? '' },
  });
  return { authorization: `Bearer ${claim.data?.credential ?? ''}` };
}

describe('Maps tokens per installation per day', () => {
  it('a self-registered installation gets its daily tokens, then 429 maps_token_limit on every host it pairs', async () => {
    const attacker = await paired(relay);
    const secondHost = await anotherHost(attacker.deviceAuth, attacker.phone.id);

    // An Apple outage costs nothing from the day's tokens.
    apple.failWith = 503;
    expect((await mint(attacker.gatewayAuth)).response.status).toBe(502);
    apple.failWith = undefined;

    const granted = [await mint(attacker.gatewayAuth), await mint(secondHost), await mint(attacker.gatewayAuth)];
    expect(granted.map((r) => r.response.status)).toEqual([200, 200, 200]);
    for (const host of [attacker.gatewayAuth, secondHost]) {
      const refused = await mint(host);
      expect(refused.response.status).toBe(429);
      expect(refused.error).toEqual({ error: 'maps_token_limit' });
      expect(JSON.stringify(refused.data ?? {})).not.toContain('maps-access');
    }

    // Another installation's host is not affected…
    const neighbour = await paired(relay);
    expect((await mint(neighbour.gatewayAuth)).response.status).toBe(200);

    // …and the attacker's installation gets tokens again a day later.
    relay.clock.advance(DAY_MS);
    const nextDay = await mint(secondHost);
    expect(nextDay.response.status).toBe(200);
    expect(nextDay.data?.access_token).toMatch(/^maps-access-/);
  });
});
