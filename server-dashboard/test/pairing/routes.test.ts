import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDashboardClient } from '@conduit/sdk/dashboard';
import { credentialPath, readCredentials } from '../../src/credentials/credential-store.js';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { resolveProfile } from '../../src/fronting/profiles.js';
import { createRelayApi } from '../../src/pairing/relay-api.js';
import { registerPairingRoutes } from '../../src/pairing/routes.js';
import { PairingRelay } from './support/pairing-relay.js';

let relay: PairingRelay;
let root: string;
let app: FastifyInstance;
let baseUrl: string;
let nowMs: number;

beforeAll(async () => {
  relay = new PairingRelay();
  await relay.start();
});
afterAll(() => relay.stop());

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'conduit-routes-'));
  nowMs = 1_770_000_000_000;
  app = Fastify();
  registerPairingRoutes(app, {
    resolveProfileHome: (profile) => {
      const scope = resolveProfile(root, profile);
      return { home: scope.home, profile: scope.name };
    },
    relay: createRelayApi({ userAgent: 'Conduit-Host/test' }),
    clock: () => nowMs,
    hostname: () => 'box',
    identity: { version: '0.1.0', capabilities: ['e2e-v1'] },
  });
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await app.close();
  await rm(root, { recursive: true, force: true });
});

const client = () => createDashboardClient({ baseUrl });

async function pairViaRoute(profile?: string) {
  const answer = await client().POST('/api/plugins/conduit_push/pair', {
    params: { query: profile ? { profile } : {} },
    body: { pairing_code: relay.mintCode(), relay_url: relay.url },
  });
  expect(answer.response.status).toBe(200);
  return answer;
}

async function rawPost(path: string, body: string | Buffer, contentType = 'application/json') {
  const response = await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: response.status, body: (await response.json()) as unknown, headers: response.headers };
}

describe('POST /api/plugins/conduit_push/pair', () => {
  it('pairs the profile and answers without the credential', async () => {
    const { data, response } = await pairViaRoute();
    const file = await readCredentials(root);
    expect(data).toEqual({
      ok: true,
      paired: true,
      installation_id: relay.installationId,
      gateway_id: file?.gateway_id,
      gateway_name: 'box Hermes',
      relay_url: relay.url,
    });
    expect(JSON.stringify(data)).not.toContain(file?.credential?.split('.')[2]);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(relay.events.at(-1)).toMatchObject({ type: 'plugin.hello', profile: 'default' });
  });

  it('pairs a named profile, and answers 503 for a profile that does not exist instead of falling back', async () => {
    await mkdir(join(root, 'profiles', 'coder'), { recursive: true });
    await pairViaRoute('coder');
    expect(await readCredentials(join(root, 'profiles', 'coder'))).not.toBeNull();
    const missing = await client().POST('/api/plugins/conduit_push/pair', {
      params: { query: { profile: 'ghost' } },
      body: { pairing_code: relay.mintCode(), relay_url: relay.url },
    });
    expect(missing.response.status).toBe(503);
    expect(missing.error).toEqual({ detail: 'Profile ghost does not exist on this host' });
    expect(await readCredentials(root)).toBeNull();
  });

  it('400 for a malformed code or URL, 410 for a used code, 502 when the relay is unreachable', async () => {
    const bad = await client().POST('/api/plugins/conduit_push/pair', { body: { pairing_code: 'nope' } });
    expect(bad.response.status).toBe(400);
    const badUrl = await client().POST('/api/plugins/conduit_push/pair', {
      body: { pairing_code: relay.mintCode(), relay_url: 'https://relay.example/path' },
    });
    expect(badUrl.response.status).toBe(400);
    const code = relay.mintCode();
    const first = await client().POST('/api/plugins/conduit_push/pair', {
      body: { pairing_code: code, relay_url: relay.url },
    });
    expect(first.response.status).toBe(200);
    const again = await client().POST('/api/plugins/conduit_push/pair', {
      body: { pairing_code: code, relay_url: relay.url },
    });
    expect(again.response.status).toBe(410);
    expect(again.error).toEqual({ detail: 'That pairing code expired or was already used' });
    const down = await client().POST('/api/plugins/conduit_push/pair', {
      body: { pairing_code: relay.mintCode(), relay_url: 'http://127.0.0.1:1' },
    });
    expect(down.response.status).toBe(502);
  });

  it('maps the relay gateway limit to 429', async () => {
    relay.claimFailure = { status: 429, error: 'gateway_limit_reached' };
    const answer = await client().POST('/api/plugins/conduit_push/pair', {
      body: { pairing_code: relay.mintCode(), relay_url: relay.url },
    });
    expect(answer.response.status).toBe(429);
  });

  it('uses the profile’s current relay when relay_url is absent', async () => {
    await pairViaRoute();
    relay.received.length = 0;
    const answer = await client().POST('/api/plugins/conduit_push/pair', { body: { pairing_code: relay.mintCode() } });
    expect(answer.response.status).toBe(200);
    expect(relay.received[0]?.path).toBe('/v1/pairings/claim');
  });

  it('answers 429 past 10 requests a minute per profile, and recovers when the window moves', async () => {
    for (let i = 0; i < 10; i++) {
      const answer = await client().POST('/api/plugins/conduit_push/pair', { body: { pairing_code: 'x' } });
      expect(answer.response.status).toBe(400);
    }
    const limited = await client().POST('/api/plugins/conduit_push/pair', { body: { pairing_code: 'x' } });
    expect(limited.response.status).toBe(429);
    expect(limited.error).toEqual({ detail: 'Too many pairing requests; try again shortly' });
    nowMs += 60_000;
    const later = await client().POST('/api/plugins/conduit_push/pair', { body: { pairing_code: 'x' } });
    expect(later.response.status).toBe(400);
  });

  it('400 for a body that is not JSON, 413 past 4 KiB, and a corrupt file is reported as 409, untouched', async () => {
    const notJson = await rawPost('/api/plugins/conduit_push/pair', '{nope');
    expect(notJson).toMatchObject({ status: 400, body: { detail: 'Request body is not JSON' } });
    const big = await rawPost('/api/plugins/conduit_push/pair', JSON.stringify({ pairing_code: 'x'.repeat(5000) }));
    expect(big).toMatchObject({ status: 413, body: { detail: 'Request body is too large' } });
    await writeFile(credentialPath(root), '[1,2');
    const corrupt = await client().POST('/api/plugins/conduit_push/pair', {
      body: { pairing_code: relay.mintCode(), relay_url: relay.url },
    });
    expect(corrupt.response.status).toBe(409);
    expect(await readFile(credentialPath(root), 'utf8')).toBe('[1,2');
  });
});

describe('GET/POST /api/plugins/conduit_push/e2e', () => {
  it('unpaired: GET says so and POST is 409', async () => {
    const status = await client().GET('/api/plugins/conduit_push/e2e');
    expect(status.data).toEqual({ ok: true, paired: false, crypto: true });
    const post = await client().POST('/api/plugins/conduit_push/e2e', {
      body: { installation_id: 'a', gateway_id: 'b', kid: '0'.repeat(32), secret: encodeBase64Url(randomBytes(32)) },
    });
    expect(post.response.status).toBe(409);
    expect(post.error).toEqual({ detail: "This Hermes profile isn't paired with Conduit" });
  });

  it('stores the key for this pairing (0600), answers only the kid, and GET shows it', async () => {
    const { data } = await pairViaRoute();
    const kid = randomBytes(16).toString('hex');
    const secret = encodeBase64Url(randomBytes(32));
    const post = await client().POST('/api/plugins/conduit_push/e2e', {
      body: { installation_id: data?.installation_id ?? '', gateway_id: data?.gateway_id ?? '', kid, secret },
    });
    expect(post.response.status).toBe(200);
    expect(post.data).toEqual({ ok: true, kid });
    expect(post.response.headers.get('pragma')).toBe('no-cache');
    const stored = await readCredentials(root);
    expect(stored?.e2e).toMatchObject({ kid, secret, created_at: '2026-02-02T02:40:00Z' });
    const status = await client().GET('/api/plugins/conduit_push/e2e');
    expect(status.data).toEqual({
      ok: true,
      paired: true,
      installation_id: data?.installation_id,
      gateway_id: data?.gateway_id,
      e2e: { kid },
      crypto: true,
    });
    expect(JSON.stringify(status.data)).not.toContain(secret);
  });

  it('validates ids, kid and secret in order, and refuses another device', async () => {
    const { data } = await pairViaRoute();
    const ids = { installation_id: data?.installation_id ?? '', gateway_id: data?.gateway_id ?? '' };
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ kid: '0'.repeat(32) }, 400, 'installation_id and gateway_id are required'],
      [
        { ...ids, kid: 'ABC', secret: encodeBase64Url(randomBytes(32)) },
        400,
        'kid must be 32 lowercase hex characters',
      ],
      [{ ...ids, kid: '0'.repeat(32), secret: 'short' }, 400, 'secret must be 32 bytes, base64url without padding'],
      [
        { ...ids, gateway_id: 'another', kid: '0'.repeat(32), secret: encodeBase64Url(randomBytes(32)) },
        409,
        'This Hermes profile is paired with a different device',
      ],
    ];
    for (const [body, status, detail] of cases) {
      const answer = await rawPost('/api/plugins/conduit_push/e2e', JSON.stringify(body));
      expect(answer).toMatchObject({ status, body: { detail } });
    }
    expect((await readCredentials(root))?.e2e).toBeUndefined();
  });

  it('a malformed ?profile= is a 400 in the dashboard error shape', async () => {
    const response = await fetch(`${baseUrl}/api/plugins/conduit_push/e2e?profile=${'x'.repeat(65)}`);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ detail: expect.any(String) });
  });

  // The route module reads any body type as FastAPI does; in the service, the authenticated scope
  // refuses the preflight-free ones first (test/fronting/attacks.test.ts).
  it('an empty body reads as {} and a body of any content type is read as JSON', async () => {
    const empty = await fetch(`${baseUrl}/api/plugins/conduit_push/e2e`, { method: 'POST' });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toEqual({ detail: 'installation_id and gateway_id are required' });
    // Only a parsed body gets past the ids to the kid check.
    const text = await rawPost(
      '/api/plugins/conduit_push/e2e',
      JSON.stringify({ installation_id: 'i', gateway_id: 'g' }),
      'text/plain',
    );
    expect(text).toMatchObject({ status: 400, body: { detail: 'kid must be 32 lowercase hex characters' } });
    const array = await rawPost('/api/plugins/conduit_push/pair', '[1]');
    expect(array).toMatchObject({ status: 400 });
  });

  it('409 asks for a re-pair when the pairing has no gateway id', async () => {
    await writeFile(credentialPath(root), JSON.stringify({ credential: 'a.b.c', installation_id: 'i' }));
    const answer = await client().POST('/api/plugins/conduit_push/e2e', {
      body: { installation_id: 'i', gateway_id: 'g', kid: '0'.repeat(32), secret: encodeBase64Url(randomBytes(32)) },
    });
    expect(answer.error).toEqual({ detail: 'Pair this Hermes profile with Conduit again to turn on encryption' });
  });

  it('answers 429 past 10 key requests a minute for a profile', async () => {
    for (let i = 0; i < 10; i++) expect((await rawPost('/api/plugins/conduit_push/e2e', '{}')).status).toBe(400);
    const limited = await rawPost('/api/plugins/conduit_push/e2e', '{}');
    expect(limited).toMatchObject({
      status: 429,
      body: { detail: 'Too many encryption key requests; try again shortly' },
    });
  });

  it('GET reads a key provisioned for another pairing as null', async () => {
    const { data } = await pairViaRoute();
    const kid = randomBytes(16).toString('hex');
    await client().POST('/api/plugins/conduit_push/e2e', {
      body: {
        installation_id: data?.installation_id ?? '',
        gateway_id: data?.gateway_id ?? '',
        kid,
        secret: encodeBase64Url(randomBytes(32)),
      },
    });
    const stored = await readCredentials(root);
    await writeFile(credentialPath(root), JSON.stringify({ ...stored, gateway_id: 'moved' }));
    const status = await client().GET('/api/plugins/conduit_push/e2e');
    expect(status.data).toMatchObject({ paired: true, e2e: null });
  });
});
