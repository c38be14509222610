/**
 * Routes 2–4 and 8–9, 14–15 against a real relay process: registration (token normalisation and check
 * order), updates (null clears, merge, semantic no-op), deactivation, pairing codes and claims.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deviceToken,
  eventId,
  pairHost,
  PUBLIC_URL,
  registerPhone,
  ROOMY_BUDGETS,
  startRelay,
  TOPIC,
  type Relay,
} from './relay.js';

let relay: Relay;

beforeAll(async () => {
  relay = await startRelay({ ...ROOMY_BUDGETS, RELAY_MAX_GATEWAYS_PER_INSTALLATION: '2' });
});
afterAll(() => relay.stop());

const HEX = 'ab'.repeat(32);
const valid = () => ({ bundle_id: TOPIC, device_token: deviceToken(), environment: 'production' as const });

const DEFAULT_PREFERENCES = {
  enabled: true,
  approval_needed: true,
  input_needed: true,
  response_ready: true,
  turn_failed: true,
  background_task_finished: true,
  call_requested: true,
  completion_sound: true,
  attention_sound: true,
  show_previews: false,
  decision_cards: true,
};

describe('POST /v1/installations', () => {
  it('answers 201 {installation, credential, relay_url} with the public installation DTO', async () => {
    const { data, response } = await relay.client.POST('/v1/installations', { body: valid() });
    expect(response.status).toBe(201);
    const id = data?.installation.id ?? '';
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(data?.credential).toMatch(new RegExp(`^${id}\\.[A-Za-z0-9_-]{43}$`));
    expect(data?.relay_url).toBe(PUBLIC_URL);
    expect(data?.installation).toEqual({
      id,
      active: true,
      gateways: [],
      preferences: DEFAULT_PREFERENCES,
      voip: false,
      watch_voip: false,
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) as unknown,
    });
  });

  it('normalises tokens: <, >, whitespace removed, lowercased; PushKit tokens too', async () => {
    const raw = `<${'AB'.repeat(16)} ${'Cd'.repeat(16)}\n>`;
    const reply = await relay.call('POST', '/v1/installations', {
      body: { ...valid(), device_token: raw, voip_token: raw, watch_voip_token: raw },
    });
    expect(reply.status).toBe(201);
    const body = reply.json as { installation: { id: string; voip: boolean; watch_voip: boolean }; credential: string };
    expect(body.installation.voip).toBe(true);
    expect(body.installation.watch_voip).toBe(true);
    // The alert goes to the normalised token.
    const phone = {
      id: body.installation.id,
      credential: body.credential,
      auth: `Bearer ${body.credential}`,
      token: '',
    };
    const host = await pairHost(relay, phone);
    const before = relay.captures().length;
    const event = { type: 'response.ready', event_id: eventId() };
    expect((await relay.call('POST', '/v1/events', { auth: host.auth, body: event })).status).toBe(202);
    expect(
      relay
        .captures()
        .slice(before)
        .map((push) => push.deviceToken),
    ).toEqual([`${'ab'.repeat(16)}${'cd'.repeat(16)}`]);
  });

  it('non-boolean preferences fall back to their defaults', async () => {
    const reply = await relay.call('POST', '/v1/installations', {
      body: { ...valid(), preferences: { show_previews: true, enabled: 'false', decision_cards: 0, extra: true } },
    });
    expect(reply.status).toBe(201);
    expect((reply.json as { installation: { preferences: unknown } }).installation.preferences).toEqual({
      ...DEFAULT_PREFERENCES,
      show_previews: true,
    });
  });

  it.each([
    [{ device_token: undefined }, 'invalid_device_token'],
    [{ device_token: 'ab'.repeat(31) + 'a' }, 'invalid_device_token'],
    [{ device_token: 'ab'.repeat(100) + 'a' }, 'invalid_device_token'],
    [{ device_token: 'zz'.repeat(32) }, 'invalid_device_token'],
    [{ voip_token: 'xyz' }, 'invalid_voip_token'],
    [{ watch_voip_token: 'xyz' }, 'invalid_watch_voip_token'],
    [{ bundle_id: `${TOPIC}.other` }, 'invalid_topic'],
    [{ environment: 'development' }, 'production_only'],
    [{ environment: undefined }, 'production_only'],
  ])('%j is 400 %s', async (change, code) => {
    const reply = await relay.call('POST', '/v1/installations', { body: { ...valid(), ...change } });
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: code });
  });

  it('checks in order: device_token, voip, watch_voip, bundle_id, environment', async () => {
    const all = { bundle_id: 'x', device_token: 'x', voip_token: 'x', watch_voip_token: 'x', environment: 'x' };
    const steps: [Record<string, unknown>, string][] = [
      [all, 'invalid_device_token'],
      [{ ...all, device_token: HEX }, 'invalid_voip_token'],
      [{ ...all, device_token: HEX, voip_token: HEX }, 'invalid_watch_voip_token'],
      [{ ...all, device_token: HEX, voip_token: HEX, watch_voip_token: HEX }, 'invalid_topic'],
      [{ ...all, device_token: HEX, voip_token: HEX, watch_voip_token: HEX, bundle_id: TOPIC }, 'production_only'],
    ];
    for (const [body, code] of steps) {
      const reply = await relay.call('POST', '/v1/installations', { body });
      expect(reply.json, code).toEqual({ error: code });
    }
  });

  it('the per-IP limit (12/min) comes before the body', async () => {
    const ip = '10.200.0.1';
    for (let i = 0; i < 12; i += 1) {
      expect((await relay.call('POST', '/v1/installations', { ip, body: { device_token: 'bad' } })).status).toBe(400);
    }
    const limited = await relay.call('POST', '/v1/installations', { ip, raw: 'not json' });
    expect(limited.status).toBe(429);
    expect(limited.json).toEqual({ error: 'rate_limited' });
  });
});

describe('PUT /v1/installations/:id', () => {
  it('requires the device credential of the path installation', async () => {
    const phone = await registerPhone(relay);
    const other = await registerPhone(relay);
    for (const auth of [undefined, other.auth, `Bearer ${phone.id}.wrongsecret`]) {
      const reply = await relay.call('PUT', `/v1/installations/${phone.id}`, { auth, body: {} });
      expect(reply.status).toBe(401);
      expect(reply.json).toEqual({ error: 'unauthorized' });
    }
  });

  it('null clears a PushKit token, absent keeps it; preferences merge over the stored ones', async () => {
    const phone = await registerPhone(relay, {
      voip_token: HEX,
      watch_voip_token: HEX,
      preferences: { show_previews: true },
    });
    const path = `/v1/installations/${phone.id}`;
    const keep = await relay.call('PUT', path, {
      auth: phone.auth,
      body: { preferences: { completion_sound: false } },
    });
    expect(keep.status).toBe(200);
    const kept = (keep.json as { installation: Record<string, unknown> }).installation;
    expect(kept.voip).toBe(true);
    expect(kept.watch_voip).toBe(true);
    expect(kept.preferences).toEqual({ ...DEFAULT_PREFERENCES, show_previews: true, completion_sound: false });
    const clear = await relay.call('PUT', path, { auth: phone.auth, body: { voip_token: null } });
    const cleared = (clear.json as { installation: Record<string, unknown> }).installation;
    expect(cleared.voip).toBe(false);
    expect(cleared.watch_voip).toBe(true);
    const clearWatch = await relay.call('PUT', path, { auth: phone.auth, body: { watch_voip_token: null } });
    expect((clearWatch.json as { installation: Record<string, unknown> }).installation.watch_voip).toBe(false);
  });

  it.each([
    [{ device_token: 'nothex' }, 'invalid_device_token'],
    [{ device_token: null }, 'invalid_device_token'],
    [{ voip_token: 'short' }, 'invalid_voip_token'],
    [{ watch_voip_token: 12 }, 'invalid_watch_voip_token'],
  ])('%j is 400 %s', async (body, code) => {
    const phone = await registerPhone(relay);
    const reply = await relay.call('PUT', `/v1/installations/${phone.id}`, { auth: phone.auth, body });
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: code });
  });

  it('a semantic no-op answers 200 without touching updated_at', async () => {
    const phone = await registerPhone(relay, { voip_token: HEX });
    const path = `/v1/installations/${phone.id}`;
    const first = await relay.call('PUT', path, { auth: phone.auth, body: {} });
    const before = (first.json as { installation: { updated_at: string } }).installation.updated_at;
    await new Promise((resolve) => setTimeout(resolve, 15));
    const same = await relay.call('PUT', path, {
      auth: phone.auth,
      body: {
        device_token: phone.token.toUpperCase(),
        voip_token: `<${HEX}>`,
        preferences: { decision_cards: true, enabled: true, show_previews: false },
      },
    });
    expect(same.status).toBe(200);
    expect((same.json as { installation: { updated_at: string } }).installation.updated_at).toBe(before);
    const changed = await relay.call('PUT', path, { auth: phone.auth, body: { preferences: { enabled: false } } });
    expect((changed.json as { installation: { updated_at: string } }).installation.updated_at).not.toBe(before);
  });
});

describe('DELETE /v1/installations/:id', () => {
  it('answers 204 and deactivates (both credentials then 401)', async () => {
    const phone = await registerPhone(relay);
    const host = await pairHost(relay, phone);
    const deleted = await relay.call('DELETE', `/v1/installations/${phone.id}`, { auth: phone.auth });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await relay.call('GET', '/v1/meta', { auth: phone.auth })).status).toBe(401);
    const event = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'plugin.hello', event_id: 'after-delete-1' },
    });
    expect(event.status).toBe(401);
  });
});

describe('pairing codes', () => {
  it('201 {pairing_code: XXXXX-XXXXX from the unambiguous alphabet, expires_at = now + 10 min}', async () => {
    const phone = await registerPhone(relay);
    const { data, response } = await relay.client.POST('/v1/installations/{id}/pairings', {
      params: { path: { id: phone.id } },
      headers: { authorization: phone.auth },
      body: {},
    });
    expect(response.status).toBe(201);
    expect(data?.pairing_code).toMatch(/^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{5}-[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{5}$/);
    const ttl = Date.parse(data?.expires_at ?? '') - Date.now();
    expect(ttl).toBeGreaterThan(9 * 60_000);
    expect(ttl).toBeLessThanOrEqual(10 * 60_000);
  });

  it('creating a new code retires the previous unclaimed one', async () => {
    const phone = await registerPhone(relay);
    const make = async () =>
      (
        (await relay.call('POST', `/v1/installations/${phone.id}/pairings`, { auth: phone.auth, body: {} })).json as {
          pairing_code: string;
        }
      ).pairing_code;
    const first = await make();
    const second = await make();
    const stale = await relay.call('POST', '/v1/pairings/claim', { body: { pairing_code: first } });
    expect(stale.status).toBe(404);
    expect(stale.json).toEqual({ error: 'invalid_or_expired_pairing' });
    expect((await relay.call('POST', '/v1/pairings/claim', { body: { pairing_code: second } })).status).toBe(200);
  });

  it.each(['not-a-uuid', '00000000-0000-0000-0000-000000000000', 12, '6f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5'])(
    'dashboard_id %j is 400 invalid_dashboard_id',
    async (dashboardId) => {
      const phone = await registerPhone(relay);
      const reply = await relay.call('POST', `/v1/installations/${phone.id}/pairings`, {
        auth: phone.auth,
        body: { dashboard_id: dashboardId },
      });
      expect(reply.status).toBe(400);
      expect(reply.json).toEqual({ error: 'invalid_dashboard_id' });
    },
  );

  it('a pairing needs the path installation credential', async () => {
    const phone = await registerPhone(relay);
    const other = await registerPhone(relay);
    const reply = await relay.call('POST', `/v1/installations/${phone.id}/pairings`, { auth: other.auth, body: {} });
    expect(reply.status).toBe(401);
    expect(reply.json).toEqual({ error: 'unauthorized' });
  });
});

describe('POST /v1/pairings/claim', () => {
  it('answers {installation_id, gateway_id, credential, relay_url}; the code is single-use', async () => {
    const phone = await registerPhone(relay);
    const created = await relay.call('POST', `/v1/installations/${phone.id}/pairings`, { auth: phone.auth, body: {} });
    const code = (created.json as { pairing_code: string }).pairing_code;
    // Codes are normalised: lowercase and without the dash still claim.
    const claim = await relay.client.POST('/v1/pairings/claim', {
      body: { pairing_code: ` ${code.replace('-', '').toLowerCase()} ` },
    });
    expect(claim.response.status).toBe(200);
    const gatewayId = claim.data?.gateway_id ?? '';
    expect(claim.data?.installation_id).toBe(phone.id);
    expect(claim.data?.credential).toMatch(new RegExp(`^${phone.id}\\.${gatewayId}\\.[A-Za-z0-9_-]{43}$`));
    expect(claim.data?.relay_url).toBe(PUBLIC_URL);
    const again = await relay.call('POST', '/v1/pairings/claim', { body: { pairing_code: code } });
    expect(again.status).toBe(404);
    expect(again.json).toEqual({ error: 'invalid_or_expired_pairing' });
  });

  it.each([{}, { pairing_code: 'AAAAA-AAAAA' }, { pairing_code: 42 }, { pairing_code: '' }])(
    '%j is 404 invalid_or_expired_pairing',
    async (body) => {
      const reply = await relay.call('POST', '/v1/pairings/claim', { body });
      expect(reply.status).toBe(404);
      expect(reply.json).toEqual({ error: 'invalid_or_expired_pairing' });
    },
  );

  it('gateway_name defaults to "Hermes gateway" and is cut to 80 characters; meta lists gateways', async () => {
    const phone = await registerPhone(relay);
    const dashboard = '6F1C2D3E-4A5B-4C7D-8E9F-0A1B2C3D4E5F';
    const named = await pairHost(relay, phone, { dashboard_id: dashboard }, { gateway_name: 'n'.repeat(100) });
    const unnamed = await pairHost(relay, phone, {}, {});
    const meta = await relay.call('GET', '/v1/meta', { auth: phone.auth });
    expect(meta.status).toBe(200);
    const body = meta.json as { version: string; capabilities: string[]; gateways: Record<string, unknown>[] };
    expect(body.capabilities).toEqual(
      expect.arrayContaining([
        'decisions',
        'decision-cards',
        'meta',
        'e2e-v1',
        'watch-tools-v1',
        'watch-audio-v1',
        'calls',
        'voip-calls',
        'watch-calls',
      ]),
    );
    const byId = new Map(body.gateways.map((gateway) => [gateway.id, gateway]));
    expect(byId.get(named.gatewayId)).toMatchObject({ name: 'n'.repeat(80), dashboard_id: dashboard.toLowerCase() });
    expect(byId.get(unnamed.gatewayId)).toMatchObject({ name: 'Hermes gateway' });
    expect(byId.get(unnamed.gatewayId)?.dashboard_id ?? null).toBeNull();
  });

  it('at the gateway cap: 429 gateway_limit_reached, and the code stays claimable', async () => {
    const phone = await registerPhone(relay);
    const first = await pairHost(relay, phone);
    await pairHost(relay, phone);
    const created = await relay.call('POST', `/v1/installations/${phone.id}/pairings`, { auth: phone.auth, body: {} });
    const code = (created.json as { pairing_code: string }).pairing_code;
    const full = await relay.call('POST', '/v1/pairings/claim', { body: { pairing_code: code } });
    expect(full.status).toBe(429);
    expect(full.json).toEqual({ error: 'gateway_limit_reached' });
    // Unpair one gateway (route 14): the kept code now claims.
    const revoked = await relay.call('DELETE', '/v1/gateways/current', { auth: first.auth });
    expect(revoked.status).toBe(204);
    expect((await relay.call('POST', '/v1/pairings/claim', { body: { pairing_code: code } })).status).toBe(200);
    const event = await relay.call('POST', '/v1/events', {
      auth: first.auth,
      body: { type: 'plugin.hello', event_id: 'revoked-gw-1' },
    });
    expect(event.status).toBe(401);
  });

  it('claiming a code of a deactivated installation consumes it and answers 404', async () => {
    const phone = await registerPhone(relay);
    const created = await relay.call('POST', `/v1/installations/${phone.id}/pairings`, { auth: phone.auth, body: {} });
    const code = (created.json as { pairing_code: string }).pairing_code;
    expect((await relay.call('DELETE', `/v1/installations/${phone.id}`, { auth: phone.auth })).status).toBe(204);
    const claim = await relay.call('POST', '/v1/pairings/claim', { body: { pairing_code: code } });
    expect(claim.status).toBe(404);
    expect(claim.json).toEqual({ error: 'invalid_or_expired_pairing' });
  });

  it('the per-IP claim limit is 20 per minute', async () => {
    const ip = '10.201.0.1';
    for (let i = 0; i < 20; i += 1) {
      expect((await relay.call('POST', '/v1/pairings/claim', { ip, body: {} })).status).toBe(404);
    }
    const limited = await relay.call('POST', '/v1/pairings/claim', { ip, body: {} });
    expect(limited.status).toBe(429);
    expect(limited.json).toEqual({ error: 'rate_limited' });
  });
});
