import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEALTH_LABEL } from '@conduit/contracts/dashboard/health';
import type { Host } from '../../src/app.js';
import { healthFeature, healthVoiceTool } from '../../src/features/health/index.js';
import { HEALTH_SHAPE } from '../../src/features/health/health-reads.js';
import { PhoneDataStore } from '../../src/kernel/phone-data/store.js';
import type { VoiceReadContext, VoiceToolProvider } from '../../src/kernel/phone-data/voice-tool-provider.js';
import { voiceToolsFeature } from '../../src/features/voice-tools/index.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { chachaOpen, chachaSeal, PhoneStandIn, voiceAadOf, type Answer } from '../support/phone-stand-in.js';

const home = tempHermesHome();
const clock = new ManualClock();
let host: Host & { url: string };

/**
 * A second tool on health's key that reports each call: it proves a refused call never reaches a read
 * handler, and that a call sealed for conduit_health does not open as another tool of the same key.
 */
const probeCalls: { deviceId: string; args: Record<string, unknown>; context: VoiceReadContext }[] = [];
const probeTool: VoiceToolProvider = {
  name: 'conduit_probe',
  key: 'health',
  label: HEALTH_LABEL,
  shape: HEALTH_SHAPE,
  describe: () => ({ description: 'A probe.', parameters: { type: 'object' } }),
  available: () => false,
  read(_home, deviceId, args, context) {
    probeCalls.push({ deviceId, args, context });
    return { result: { ok: true, probe: deviceId } };
  },
};

const DAY = 1_780_000_000 - (1_780_000_000 % 86_400);
/** The day the test data covers, as a read names it: the service's clock is months before it. */
const DAY_DATE = new Date(DAY * 1000).toISOString().slice(0, 10);
const onDay = { start_date: DAY_DATE, end_date: DAY_DATE };
const steps = (value: number) => ({
  kind: 'total',
  window: 'day',
  metric: 'stepCount',
  start: DAY,
  value,
  unit: 'count',
  computed_at: DAY + 100,
});

const phone = (deviceId: string, options: { profile?: string; secret?: Uint8Array } = {}) =>
  new PhoneStandIn(host.url, 'health', HEALTH_LABEL, deviceId, options);

interface VoiceCallEnvelope {
  v: 1;
  device_id: string;
  kid: string;
  call_id: string;
  tool: string;
  nonce: string;
  ct: string;
}

/**
 * A voice call as Conduit seals a voice model's tool call: `{call_id, tool, args, provider}` under the
 * device's `voice device-to-host` key, the tool bound in the associated data. `aadTool` seals it for
 * another tool than the one named in the clear.
 */
function voiceCall(
  device: PhoneStandIn,
  callId: string,
  args: Record<string, unknown>,
  options: { tool?: string; aadTool?: string; provider?: string } = {},
): VoiceCallEnvelope {
  const tool = options.tool ?? 'conduit_health';
  const kid = device.kid ?? '';
  const nonce = Buffer.alloc(12, callId.length);
  const plain = Buffer.from(
    JSON.stringify({ call_id: callId, tool, args, provider: options.provider ?? 'gemini-live' }),
  );
  const aad = voiceAadOf(HEALTH_LABEL, options.aadTool ?? tool, kid, device.deviceId, callId);
  const ct = chachaSeal(device.key('voice device-to-host'), nonce, aad, plain);
  return { v: 1, device_id: device.deviceId, kid, call_id: callId, tool, nonce: b64(nonce), ct: b64(ct) };
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');

async function post(body: unknown, profile?: string): Promise<Answer> {
  const query = profile ? `?profile=${profile}` : '';
  const response = await fetch(`${host.url}/api/plugins/conduit_push/voice-tools/call${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function listing(deviceId: string | null, profile?: string): Promise<Answer> {
  const params = new URLSearchParams({ ...(profile ? { profile } : {}), ...(deviceId ? { device_id: deviceId } : {}) });
  const response = await fetch(`${host.url}/api/plugins/conduit_push/voice-tools?${params.toString()}`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The answer opened with `key` (a device's `voice host-to-device` key), or null when it does not open. */
function openAnswer(answer: Record<string, unknown>, key: Uint8Array, label = HEALTH_LABEL): unknown {
  const aad = voiceAadOf(
    label,
    String(answer.tool),
    String(answer.kid),
    String(answer.device_id),
    String(answer.call_id),
  );
  const plain = chachaOpen(
    key,
    Buffer.from(String(answer.nonce), 'base64url'),
    aad,
    Buffer.from(String(answer.ct), 'base64url'),
  );
  return plain === null ? null : (JSON.parse(plain.toString('utf8')) as unknown);
}

const readsOf = (profileHome: string) => {
  const store = PhoneDataStore.open(profileHome, HEALTH_SHAPE, false);
  try {
    return store?.readsSince(0) ?? [];
  } finally {
    store?.close();
  }
};

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }), {
    features: [healthFeature, voiceToolsFeature([healthVoiceTool, probeTool])],
  });
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

describe('voice tools listing', () => {
  it('is served as the voice-tools capability and behind the caller check', async () => {
    const capabilities = await fetch(`${host.url}/api/plugins/conduit_push/capabilities`);
    expect(((await capabilities.json()) as { capabilities: string[] }).capabilities).toContain('voice-tools');
    const anonymous = await fetch(`${host.url}/api/plugins/conduit_push/voice-tools?device_id=x`);
    expect(anonymous.status).toBe(401);
    const call = await fetch(`${host.url}/api/plugins/conduit_push/voice-tools/call`, { method: 'POST', body: '{}' });
    expect(call.status).toBe(401);
  });

  it('hides health until this device has shared data under a current key, then offers it without device', async () => {
    const device = phone('list-phone', { profile: 'work' });
    expect((await listing(null, 'work')).body).toEqual({ ok: true, device_id: null, tools: [] });
    expect((await listing('list-phone', 'work')).body).toEqual({ ok: true, device_id: 'list-phone', tools: [] });
    await device.agree();
    // A key but nothing shared yet.
    expect((await listing('list-phone', 'work')).body).toMatchObject({ tools: [] });
    await device.send({ v: 1, items: [steps(4000)] });
    const listed = await listing('list-phone', 'work');
    expect(listed.status).toBe(200);
    const tools = listed.body.tools as { name: string; key: string; description: string; parameters: unknown }[];
    // The probe is never available: only health is listed.
    expect(tools.map((tool) => [tool.name, tool.key])).toEqual([['conduit_health', 'health']]);
    expect(tools[0]?.description).toContain('Apple Health');
    const parameters = tools[0]?.parameters as {
      type: string;
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(parameters.type).toBe('object');
    expect(Object.keys(parameters.properties).sort()).toEqual(['action', 'days', 'end_date', 'metric', 'start_date']);
    expect(parameters.required).toEqual(['action']);
    expect(JSON.stringify(parameters)).not.toMatch(/_conduit_context|"device"|\$schema/);
    // Another device of the profile, without a key, is offered nothing.
    expect((await listing('someone-else', 'work')).body).toMatchObject({ tools: [] });
    expect((await listing('bad id!', 'work')).status).toBe(400);
    // A wiped device is offered nothing again.
    await device.call('POST', 'wipe', { device_id: 'list-phone' });
    expect((await listing('list-phone', 'work')).body).toMatchObject({ tools: [] });
  });
});

describe('sealed voice reads', () => {
  let mine: PhoneStandIn;
  let other: PhoneStandIn;

  beforeAll(async () => {
    mine = phone('iphone-1');
    other = phone('ipad-2');
    await mine.agree();
    await other.agree();
    await mine.send({ v: 1, items: [steps(8042)] });
    await other.send({ v: 1, items: [steps(123)] });
  });

  it("answers sealed for the asking device alone, with only that device's data, and logs the read", async () => {
    const answer = await post(voiceCall(mine, 'call-1', { action: 'daily', metric: 'stepCount', ...onDay }));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ v: 1, device_id: 'iphone-1', kid: mine.kid, call_id: 'call-1' });
    expect(answer.body.tool).toBe('conduit_health');
    const opened = openAnswer(answer.body, mine.key('voice host-to-device')) as {
      call_id: string;
      result: { ok: boolean; totals: { device_id: string; value: number }[] };
    };
    expect(opened.call_id).toBe('call-1');
    expect(opened.result.ok).toBe(true);
    expect(opened.result.totals).toEqual([expect.objectContaining({ device_id: 'iphone-1', value: 8042 })]);
    expect(JSON.stringify(opened)).not.toContain('ipad-2');
    // Only the voice host-to-device key opens it: not the call's direction, not the other device's key.
    expect(openAnswer(answer.body, mine.key('voice device-to-host'))).toBeNull();
    expect(openAnswer(answer.body, mine.key('ingest device-to-host'))).toBeNull();
    expect(openAnswer(answer.body, other.key('voice host-to-device'))).toBeNull();
    expect(readsOf(home.root).at(-1)).toMatchObject({
      deviceId: 'iphone-1',
      action: 'daily',
      via: 'Gemini Live call',
    });
  });

  it('names the voice mode in the reads log; a read refused by the handler is still a sealed answer', async () => {
    const answer = await post(
      voiceCall(
        other,
        'call-2',
        { action: 'daily', start_date: '2026-01-01', end_date: '2026-05-01' },
        {
          provider: 'grok-live',
        },
      ),
    );
    expect(answer.status).toBe(200);
    expect(openAnswer(answer.body, other.key('voice host-to-device'))).toEqual({
      call_id: 'call-2',
      result: { ok: false, error: 'A read covers at most 92 days' },
    });
    const overview = await post(voiceCall(other, 'call-3', { action: 'overview', ...onDay }, { provider: 'gpt-live' }));
    const result = (openAnswer(overview.body, other.key('voice host-to-device')) as { result: unknown }).result;
    // Its own latest total and device only: not even the other device's id.
    expect(result).toMatchObject({ devices: [{ device_id: 'ipad-2' }], latest_daily: [{ value: 123 }] });
    expect(JSON.stringify(result)).not.toMatch(/iphone-1|8042/);
    expect(readsOf(home.root).at(-1)).toMatchObject({ deviceId: 'ipad-2', action: 'overview', via: 'GPT-Live call' });
  });

  it("refuses another device's key, a tampered call and another tool bound in the seal, reading nothing", async () => {
    const before = readsOf(home.root).length;
    const good = voiceCall(mine, 'call-4', { action: 'overview' });
    // Another device's kid under this device's id: no such key here.
    expect((await post({ ...good, kid: other.kid })).status).toBe(412);
    // Sealed by the other device but claiming this one's id and kid: does not open.
    const forged = voiceCall(other, 'call-4', { action: 'overview' });
    const refused = await post({ ...forged, device_id: 'iphone-1', kid: mine.kid });
    expect(refused).toEqual({ status: 400, body: { detail: 'The voice call does not open with this device key' } });
    // One changed byte of the ciphertext.
    const ct = Buffer.from(good.ct, 'base64url');
    ct[0] = (ct[0] ?? 0) ^ 1;
    expect((await post({ ...good, ct: b64(ct) })).status).toBe(400);
    // Sealed for another tool than the one named in the clear.
    expect((await post(voiceCall(mine, 'call-5', { action: 'overview' }, { aadTool: 'conduit_probe' }))).status).toBe(
      400,
    );
    // A good call replayed as another tool on the same key: its associated data no longer matches.
    expect((await post({ ...good, tool: 'conduit_probe' })).status).toBe(400);
    // Another call id in the clear.
    expect((await post({ ...good, call_id: 'call-99' })).status).toBe(400);
    expect(probeCalls).toEqual([]);
    expect(readsOf(home.root)).toHaveLength(before);
    // The good call itself still reads.
    expect((await post(good)).status).toBe(200);
  });

  it('refuses an invalid envelope, an unknown tool and device, and actions a voice read does not offer', async () => {
    const before = readsOf(home.root).length;
    expect(await post('not json')).toEqual({ status: 400, body: { detail: 'Request body is not JSON' } });
    expect(await post({ ...voiceCall(mine, 'c-6', {}), nonce: 'short' })).toEqual({
      status: 400,
      body: { detail: 'nonce is missing or invalid' },
    });
    expect((await post(voiceCall(mine, 'c-7', { action: 'overview' }, { tool: 'conduit_cron' }))).status).toBe(404);
    expect((await post({ ...voiceCall(mine, 'c-8', {}), device_id: 'never-agreed' })).status).toBe(412);
    // No health store at all in this profile.
    expect((await post(voiceCall(mine, 'c-9', { action: 'overview' }), 'work')).status).toBe(412);
    expect(await post(voiceCall(mine, 'c-10', { action: 'write', value: 1 }))).toEqual({
      status: 400,
      body: { detail: 'action is missing or invalid' },
    });
    // A voice read covers the asking phone only: naming a device is refused, not silently widened.
    expect(await post(voiceCall(mine, 'c-11', { action: 'daily', device: 'ipad-2' }))).toEqual({
      status: 400,
      body: { detail: 'device is not an argument of a conduit_health voice read' },
    });
    expect(readsOf(home.root)).toHaveLength(before);
  });

  it('a re-keyed device reads nothing: its old calls have no key, and its new key finds no old data', async () => {
    const oldCall = voiceCall(other, 'call-20', { action: 'daily', ...onDay });
    const rekeyed = phone('ipad-2');
    expect((await rekeyed.agree()).body).toMatchObject({ replaced: true });
    expect((await post(oldCall)).status).toBe(412);
    const answer = await post(voiceCall(rekeyed, 'call-21', { action: 'daily', ...onDay }));
    expect(answer.status).toBe(200);
    const opened = openAnswer(answer.body, rekeyed.key('voice host-to-device')) as { result: { totals: unknown[] } };
    expect(opened.result.totals).toEqual([]);
    // Nor does the new key open what was sealed for the old one.
    expect(openAnswer(answer.body, other.key('voice host-to-device'))).toBeNull();
  });
});

describe('voice read limits', () => {
  it('answers 60 reads a minute per profile, refused ones included, then 429 until the window moves', async () => {
    mkdirSync(path.join(home.root, 'profiles', 'busy'), { recursive: true });
    const device = phone('busy-phone', { profile: 'busy' });
    await device.agree();
    const statuses: number[] = [];
    for (let i = 0; i < 60; i += 1) {
      const call = voiceCall(device, `busy-${i}`, { action: 'overview' });
      statuses.push((await post(i % 2 === 0 ? call : { ...call, tool: 'conduit_probe' }, 'busy')).status);
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(30);
    expect(await post(voiceCall(device, 'busy-60', { action: 'overview' }), 'busy')).toEqual({
      status: 429,
      body: { detail: 'Too many voice reads; try again shortly' },
    });
    // Another profile has its own window (this device has no key there).
    expect((await post(voiceCall(device, 'elsewhere', { action: 'overview' }), 'work')).status).toBe(412);
    clock.advance(60_000);
    expect((await post(voiceCall(device, 'busy-61', { action: 'overview' }), 'busy')).status).toBe(200);
  });
});

describe('the shared vector (voice directions)', () => {
  interface VectorCase {
    direction: string;
    aad: string;
    nonce: string;
    plaintext: string;
    sealed: string;
  }
  const vector = (
    JSON.parse(readFileSync(path.join(import.meta.dirname, '../fixtures/vectors/phone_data_vector.json'), 'utf8')) as {
      features: {
        label: string;
        host_secret: string;
        host_public: string;
        device_secret: string;
        device_id: string;
        kid: string;
        keys: Record<string, string>;
        cases: VectorCase[];
      }[];
    }
  ).features.find((feature) => feature.label === HEALTH_LABEL);

  it("opens the vector's voice call through the route and answers under its host-to-device key", async () => {
    if (!vector) throw new Error('phone_data_vector.json has no health feature');
    const profileHome = path.join(home.root, 'profiles', 'vector');
    mkdirSync(profileHome, { recursive: true });
    // The vector's host key pair, as if this profile had made it.
    const store = PhoneDataStore.open(profileHome, HEALTH_SHAPE, true);
    store?.db
      .prepare('INSERT INTO host_key (id, secret, public, created_at) VALUES (1, ?, ?, 0)')
      .run(Buffer.from(vector.host_secret, 'hex'), Buffer.from(vector.host_public, 'hex'));
    store?.close();
    const device = phone(vector.device_id, { profile: 'vector', secret: Buffer.from(vector.device_secret, 'hex') });
    expect((await device.agree()).body).toMatchObject({ kid: vector.kid });
    expect(device.key('voice device-to-host').toString('hex')).toBe(vector.keys['voice device-to-host']);

    const call = vector.cases.find((c) => c.direction === 'voice device-to-host');
    if (!call) throw new Error('no voice device-to-host case');
    const inner = JSON.parse(call.plaintext) as { call_id: string; tool: string };
    const answer = await post(
      {
        v: 1,
        device_id: vector.device_id,
        kid: vector.kid,
        call_id: inner.call_id,
        tool: inner.tool,
        nonce: b64(Buffer.from(call.nonce, 'hex')),
        ct: b64(Buffer.from(call.sealed, 'hex')),
      },
      'vector',
    );
    expect(answer.status).toBe(200);
    const answerCase = vector.cases.find((c) => c.direction === 'voice host-to-device');
    expect(answerCase?.aad).toBe(call.aad);
    const opened = openAnswer(answer.body, Buffer.from(vector.keys['voice host-to-device'] ?? '', 'hex')) as {
      call_id: string;
      result: { ok: boolean; action: string };
    };
    expect(opened).toMatchObject({ call_id: 'call-7f3a', result: { ok: true, action: 'sleep' } });
    expect(readsOf(profileHome)).toEqual([
      expect.objectContaining({ deviceId: vector.device_id, action: 'sleep', via: 'Gemini Live call' }),
    ]);
  });
});
