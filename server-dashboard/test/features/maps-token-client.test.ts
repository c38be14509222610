/**
 * The relay Maps-token client on its own, against a loopback relay stand-in that answers what
 * server-relay's POST /v1/maps/token can answer (contracts/src/relay/maps.ts): what is cached, what is
 * retried, what is refused, and that the credential goes nowhere but the relay.
 */
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { RelayMapsTokens } from '../../src/features/maps/maps-token-client.js';
import { createRelayFetch } from '../../src/pairing/relay-http.js';
import { listenOnLoopback, type LoopbackServer } from '../support/loopback-server.js';

const CREDENTIAL = 'inst.gw.secret';
let answer: (res: http.ServerResponse) => void;
const seen: { path: string; authorization: string | undefined }[] = [];
let relay: LoopbackServer;
let elsewhere: LoopbackServer;
const elsewhereSeen: string[] = [];

beforeAll(async () => {
  relay = await listenOnLoopback((req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    answer(res);
  });
  elsewhere = await listenOnLoopback((req, res) => {
    elsewhereSeen.push(req.headers.authorization ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ access_token: 'stolen', expires_at: '', expires_in: 1800 }));
  });
});
afterAll(async () => {
  await relay.close();
  await elsewhere.close();
});

function json(status: number, body: unknown) {
  return (res: http.ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
}

function client(clock = new ManualClock()) {
  return {
    clock,
    tokens: new RelayMapsTokens({ clock, fetch: createRelayFetch({ timeoutMs: 5_000 }), userAgent: 'test' }),
  };
}

describe('RelayMapsTokens', () => {
  it('sends the gateway credential to the relay and keeps the token until 30 s before it expires', async () => {
    const { clock, tokens } = client();
    answer = json(200, { access_token: 'tok-1', expires_at: '2026-01-01T00:30:00Z', expires_in: 1800 });
    seen.length = 0;
    expect(await tokens.token({ relayUrl: `${relay.url}/`, credential: CREDENTIAL })).toEqual({
      kind: 'token',
      accessToken: 'tok-1',
    });
    expect(seen).toEqual([{ path: '/v1/maps/token', authorization: `Bearer ${CREDENTIAL}` }]);
    clock.advance(1_770_000 - 1);
    await tokens.token({ relayUrl: relay.url, credential: CREDENTIAL });
    expect(seen).toHaveLength(1);
    clock.advance(1);
    await tokens.token({ relayUrl: relay.url, credential: CREDENTIAL });
    expect(seen).toHaveLength(2);
  });

  it('does not keep a token that is about to lapse, and forgets one Apple refused', async () => {
    const { tokens } = client();
    answer = json(200, { access_token: 'short', expires_at: '', expires_in: 10 });
    seen.length = 0;
    await tokens.token({ relayUrl: relay.url, credential: CREDENTIAL });
    await tokens.token({ relayUrl: relay.url, credential: CREDENTIAL });
    expect(seen).toHaveLength(2);
    answer = json(200, { access_token: 'long', expires_at: '', expires_in: 1800 });
    await tokens.token({ relayUrl: relay.url, credential: CREDENTIAL });
    tokens.forget(relay.url, 'long');
    await tokens.token({ relayUrl: relay.url, credential: CREDENTIAL });
    expect(seen).toHaveLength(4);
  });

  it('refuses without backing off on 502, 429 and a malformed answer; backs off an hour only on 404', async () => {
    const { clock, tokens } = client();
    const target = { relayUrl: relay.url, credential: CREDENTIAL };
    answer = json(502, { error: 'maps_unreachable' });
    expect(await tokens.token(target)).toEqual({ kind: 'refused', reason: 'maps_unreachable' });
    answer = json(429, { error: 'maps_token_limit' });
    expect(await tokens.token(target)).toEqual({ kind: 'refused', reason: 'maps_token_limit' });
    answer = json(429, { error: 'rate_limited' });
    expect(await tokens.token(target)).toEqual({ kind: 'refused', reason: 'rate_limited' });
    answer = json(401, { error: 'unauthorized' });
    expect(await tokens.token(target)).toEqual({ kind: 'refused', reason: 'unauthorized' });
    answer = json(200, { access_token: 42 });
    expect(await tokens.token(target)).toEqual({ kind: 'refused', reason: 'relay_error' });
    answer = json(404, { error: 'maps_unavailable' });
    seen.length = 0;
    const unavailable = await tokens.token(target);
    expect(unavailable).toEqual({ kind: 'unavailable', untilMs: clock.now() + 3_600_000 });
    expect(await tokens.token(target)).toEqual(unavailable);
    expect(seen).toHaveLength(1);
    expect(tokens.unavailableUntilMs(relay.url)).toBe(clock.now() + 3_600_000);
    clock.advance(3_600_000);
    expect(tokens.unavailableUntilMs(relay.url)).toBeNull();
    answer = json(200, { access_token: 'back', expires_at: '', expires_in: 1800 });
    expect(await tokens.token(target)).toEqual({ kind: 'token', accessToken: 'back' });
  });

  it('never follows a redirect with the credential, and never sends it in clear beyond this machine', async () => {
    const { tokens } = client();
    answer = (res) => {
      res.writeHead(307, { location: `${elsewhere.url}/v1/maps/token` });
      res.end();
    };
    expect(await tokens.token({ relayUrl: relay.url, credential: CREDENTIAL })).toEqual({
      kind: 'refused',
      reason: 'relay_error',
    });
    expect(elsewhereSeen).toEqual([]);
    seen.length = 0;
    expect(await tokens.token({ relayUrl: 'http://relay.example.com', credential: CREDENTIAL })).toEqual({
      kind: 'refused',
      reason: 'insecure_relay_url',
    });
    expect(seen).toEqual([]);
  });
});
