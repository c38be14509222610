import { afterEach, describe, expect, it } from 'vitest';
import { providerKeyPair } from '../apns/keys.js';
import { FakeAppleMaps } from './fake-apple-maps.js';
import { startWatchRelay, type WatchTestRelay } from './harness.js';

const mapsKey = providerKeyPair();
let relay: WatchTestRelay;
let apple: FakeAppleMaps;
afterEach(async () => {
  await relay.close();
  await apple?.close();
});

async function setup(keyPem = mapsKey.privatePem) {
  apple = await FakeAppleMaps.start(mapsKey.publicPem, 'MAPSKEY123', 'TEAMID6789');
  relay = await startWatchRelay({ maps: { keyId: 'MAPSKEY123', teamId: 'TEAMID6789', keyPem, tokenUrl: apple.url } });
  const host = relay.gateway();
  const mint = (authorization = host.authorization) =>
    relay.client.POST('/v1/maps/token', { headers: { authorization } });
  return { host, mint };
}

describe('POST /v1/maps/token', () => {
  it('exchanges a signed JWT at Apple and hands every host the same cached token', async () => {
    const { mint } = await setup();
    const first = await mint();
    expect(first.response.status).toBe(200);
    expect(first.data).toEqual({
      access_token: 'maps-access-1',
      expires_at: new Date(relay.clock.now + 1_800_000).toISOString(),
      expires_in: 1800,
    });
    expect(apple.lastHeader).toEqual({ alg: 'ES256', kid: 'MAPSKEY123', typ: 'JWT' });
    expect(apple.lastClaims).toMatchObject({ iss: 'TEAMID6789', iat: Math.floor(relay.clock.now / 1000) });
    const other = await mint(relay.gateway().authorization);
    expect(other.data?.access_token).toBe('maps-access-1');
    relay.clock.now += 60_000;
    expect((await mint()).data?.expires_in).toBe(1740);
    expect(apple.calls).toBe(1);
  });

  it('renews a minute before Apple’s expiry; concurrent requests share one exchange', async () => {
    const { mint } = await setup();
    await mint();
    relay.clock.now += 1_740_000;
    const renewed = await Promise.all([mint(), mint(), mint()]);
    expect(renewed.map((r) => r.data?.access_token)).toEqual(['maps-access-2', 'maps-access-2', 'maps-access-2']);
    expect(apple.calls).toBe(2);
  });

  it('502 maps_unreachable when Apple refuses the key or cannot be reached', async () => {
    const wrong = providerKeyPair();
    const { mint } = await setup(wrong.privatePem);
    const refused = await mint();
    expect(refused.response.status).toBe(502);
    expect(refused.error).toEqual({ error: 'maps_unreachable' });
    await apple.close();
    expect((await mint()).response.status).toBe(502);
  });

  it('404 maps_unavailable without a Maps key; 401 without a gateway; 429 after 30 a minute', async () => {
    apple = await FakeAppleMaps.start(mapsKey.publicPem, 'MAPSKEY123', 'TEAMID6789');
    relay = await startWatchRelay();
    const host = relay.gateway();
    const none = await relay.client.POST('/v1/maps/token', { headers: { authorization: host.authorization } });
    expect(none.response.status).toBe(404);
    expect(none.error).toEqual({ error: 'maps_unavailable' });
    expect(
      (await relay.client.POST('/v1/maps/token', { headers: { authorization: 'Bearer a.b' } })).response.status,
    ).toBe(401);
    for (let i = 0; i < 29; i += 1)
      await relay.client.POST('/v1/maps/token', { headers: { authorization: host.authorization } });
    const limited = await relay.client.POST('/v1/maps/token', { headers: { authorization: host.authorization } });
    expect(limited.response.status).toBe(429);
    expect(limited.error).toEqual({ error: 'rate_limited' });
  });
});
