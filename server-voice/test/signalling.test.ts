import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createVoiceClient } from '@conduit/sdk/voice';
import { buildApp } from '../src/app.js';
import { voiceConfig, type VoiceConfig } from '../src/config.js';
import { memoryLogger } from '../src/log.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../src/providers/scripted.js';
import {
  proxySignaturePayload,
  signProxyPayload,
  ProxyReplayGuard,
  verifyProxyIdentity,
} from '../src/signalling/proxy-identity.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';
import { makeOffer, multipart } from './support/offer.js';

const KEY = 'signalling-test-key';
/** On every answer, errors included: any origin may read it, Location too. */
const CORS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Location',
};

interface Gateway {
  app: FastifyInstance;
  url: string;
}

const opened: Gateway[] = [];
const offers: { close: () => Promise<void> }[] = [];

async function gateway(overrides: Partial<VoiceConfig> = {}, nowMs?: () => number): Promise<Gateway> {
  const app = await buildApp(voiceConfig({ apiKey: KEY, ...overrides }), {
    stt: new ScriptedSpeechToText(['hello']),
    tts: new ScriptedTextToSpeech(),
    logger: memoryLogger(),
    ...(nowMs ? { nowMs } : {}),
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const entry = { app, url };
  opened.push(entry);
  return entry;
}

async function offer(): Promise<string> {
  const made = await makeOffer();
  offers.push(made);
  return made.sdp;
}

function post(url: string, body: Buffer | string, contentType: string, headers: Record<string, string> = {}) {
  return fetch(`${url}/v1/realtime/calls`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': contentType, ...headers },
    body,
  });
}

async function expectText(response: Response, status: number, text: string) {
  expect({ status: response.status, text: await response.text() }).toEqual({ status, text });
  for (const [name, value] of Object.entries(CORS)) expect(response.headers.get(name)).toBe(value);
}

let shared: Gateway;
beforeAll(async () => {
  shared = await gateway();
});
afterEach(async () => {
  await Promise.all(offers.splice(0).map((o) => o.close()));
  await shared.app.voiceCalls.closeAll('test finished');
});
afterAll(async () => {
  await Promise.all(opened.map((g) => g.app.close()));
});

describe('POST /v1/realtime/calls', () => {
  it('answers a multipart offer with 201, the answer SDP, Location and CORS headers', async () => {
    const sdp = await offer();
    const { body, contentType } = multipart([
      { name: 'sdp', value: sdp },
      { name: 'session', value: JSON.stringify({ type: 'realtime', instructions: 'Be brief.' }) },
    ]);
    const response = await post(shared.url, body, contentType);
    expect(response.status).toBe(201);
    expect(response.headers.get('content-type')).toMatch(/^application\/sdp/);
    expect(response.headers.get('location')).toMatch(/^\/v1\/realtime\/calls\/call_[0-9a-f]{32}$/);
    for (const [name, value] of Object.entries(CORS)) expect(response.headers.get(name)).toBe(value);
    const answer = await response.text();
    expect(answer).toMatch(/^v=0\r\n/);
    expect(answer).toContain('a=candidate:');
    expect(shared.app.voiceCalls.activeCount).toBe(1);
  });

  it('accepts the raw application/sdp form and the /realtime/calls alias', async () => {
    const raw = await post(shared.url, await offer(), 'application/sdp');
    expect(raw.status).toBe(201);
    const alias = await fetch(`${shared.url}/realtime/calls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/sdp' },
      body: await offer(),
    });
    expect(alias.status).toBe(201);
    expect(alias.headers.get('location')).toMatch(/^\/v1\/realtime\/calls\/call_[0-9a-f]{32}$/);
  });

  it('is reachable through the generated client (multipart form)', async () => {
    const voice = createVoiceClient({ baseUrl: shared.url, headers: { authorization: `Bearer ${KEY}` } });
    const { response } = await voice.POST('/v1/realtime/calls', {
      body: { sdp: await offer() },
      bodySerializer: (body) => {
        const form = new FormData();
        form.set('sdp', body.sdp);
        return form;
      },
      parseAs: 'text',
    });
    expect(response.status).toBe(201);
  });

  it('answers OPTIONS with 204 and the CORS headers on both paths', async () => {
    for (const path of ['/v1/realtime/calls', '/realtime/calls']) {
      const response = await fetch(`${shared.url}${path}`, { method: 'OPTIONS' });
      expect(response.status).toBe(204);
      for (const [name, value] of Object.entries(CORS)) expect(response.headers.get(name)).toBe(value);
      expect(response.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
      expect(response.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type');
    }
  });

  it('allows every header a preflight asks for (the OpenAI SDKs send their own) and ignores a malformed list', async () => {
    const asked = 'authorization,content-type,openai-beta,x-openai-agents-sdk';
    const preflight = await fetch(`${shared.url}/v1/realtime/calls`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': asked,
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toBe(asked);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('vary')).toMatch(/Access-Control-Request-Headers/i);
    const malformed = await fetch(`${shared.url}/v1/realtime/calls`, {
      method: 'OPTIONS',
      headers: { 'access-control-request-headers': 'x-ok, bad header' },
    });
    expect(malformed.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type');
  });

  it('answers 401 unauthorized without the bearer token or with a wrong one, before reading the body', async () => {
    const missing = await fetch(`${shared.url}/v1/realtime/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/sdp' },
      body: 'v=0\r\n',
    });
    await expectText(missing, 401, 'unauthorized');
    const wrong = await post(shared.url, 'v=0\r\n', 'application/sdp', { authorization: `Bearer ${KEY}x` });
    await expectText(wrong, 401, 'unauthorized');
    // Even an unsupported content type is refused for auth first.
    const order = await post(shared.url, '{}', 'application/json', { authorization: 'Bearer nope' });
    await expectText(order, 401, 'unauthorized');
  });

  it('answers 415 to other content types, 413 to oversize parts and bodies, 400 to bad parts', async () => {
    await expectText(
      await post(shared.url, '{}', 'application/json'),
      415,
      'expected multipart/form-data or application/sdp',
    );
    await expectText(await post(shared.url, 'x', 'text/plain'), 415, 'expected multipart/form-data or application/sdp');
    const bigSdp = 'a'.repeat(256 * 1024 + 1);
    await expectText(await post(shared.url, bigSdp, 'application/sdp'), 413, 'sdp part too large');
    const bigPart = multipart([{ name: 'sdp', value: bigSdp }]);
    await expectText(await post(shared.url, bigPart.body, bigPart.contentType), 413, 'sdp part too large');
    const bigSession = multipart([
      { name: 'sdp', value: 'v=0\r\n' },
      { name: 'session', value: JSON.stringify({ instructions: 'x'.repeat(512 * 1024) }) },
    ]);
    await expectText(await post(shared.url, bigSession.body, bigSession.contentType), 413, 'session part too large');
    const huge = multipart([
      { name: 'sdp', value: 'v=0\r\n' },
      { name: 'filler', value: 'x'.repeat(800 * 1024) },
    ]);
    await expectText(await post(shared.url, huge.body, huge.contentType), 413, 'request body too large');
    const noSdp = multipart([{ name: 'session', value: '{}' }]);
    await expectText(await post(shared.url, noSdp.body, noSdp.contentType), 400, 'missing sdp');
    await expectText(await post(shared.url, '', 'application/sdp'), 400, 'missing sdp');
    for (const session of ['[]', '"text"', '{not json', 'null']) {
      const bad = multipart([
        { name: 'sdp', value: 'v=0\r\n' },
        { name: 'session', value: session },
      ]);
      await expectText(await post(shared.url, bad.body, bad.contentType), 400, 'session must be a JSON object');
    }
    expect(shared.app.voiceCalls.pendingCount).toBe(0);
    expect(shared.app.voiceCalls.activeCount).toBe(0);
  });

  it('checks the session: type, tools, tool_choice, instructions', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'transcription' }, 'only realtime sessions are supported'],
      [{ instructions: 42 }, 'instructions must be a bounded string'],
      [{ instructions: 'é'.repeat(40 * 1024) }, 'instructions must be a bounded string'],
      [{ tools: {} }, 'tools must be an array'],
      [
        { tools: [{ type: 'function', name: 'has.dot', parameters: { type: 'object' } }] },
        'tools[0].name must be an identifier of at most 64 characters without dots',
      ],
      [
        { tools: [{ type: 'function', name: 'ok' }] },
        'tools[0].parameters must be an object schema with type "object"',
      ],
      [
        { tools: [{ type: 'function', name: 'ok', parameters: { type: 'object' }, strict: true }] },
        'tools[0] has an unsupported key "strict"',
      ],
      [{ tool_choice: 'required' }, 'tool_choice "required" needs at least one tool'],
      [{ tool_choice: { type: 'function', name: 'missing' } }, 'tool_choice names a tool the session does not declare'],
    ];
    for (const [session, text] of cases) {
      const body = multipart([
        { name: 'sdp', value: 'v=0\r\n' },
        { name: 'session', value: JSON.stringify(session) },
      ]);
      await expectText(await post(shared.url, body.body, body.contentType), 400, text);
    }
  });

  it('answers 400 invalid WebRTC offer to SDP werift cannot use, and releases the slot', async () => {
    for (const sdp of ['v=0\r\n', 'not an sdp at all', 'v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n']) {
      await expectText(await post(shared.url, sdp, 'application/sdp'), 400, 'invalid WebRTC offer');
    }
    expect(shared.app.voiceCalls.pendingCount).toBe(0);
    expect(shared.app.voiceCalls.activeCount).toBe(0);
  });
});

describe('call capacity and the setup deadline', () => {
  it('answers 429 too many active calls at the cap, counting setups in progress, and frees the slot on hang-up', async () => {
    const gw = await gateway({ maxCalls: 1 });
    const first = await post(gw.url, await offer(), 'application/sdp');
    expect(first.status).toBe(201);
    await expectText(await post(gw.url, await offer(), 'application/sdp'), 429, 'too many active calls');
    const id = (first.headers.get('location') ?? '').split('/').pop() ?? '';
    await gw.app.voiceCalls.get(id)?.close('test hang-up');
    expect((await post(gw.url, await offer(), 'application/sdp')).status).toBe(201);
    await gw.app.voiceCalls.closeAll('done');
  });

  it('fails a setup whose upload outlasts the deadline with 400 and releases its slot', async () => {
    const gw = await gateway({ maxCalls: 1, callSetupTimeoutMs: 300 });
    // A body that never finishes: the client keeps the upload open.
    const stalled = new Readable({ read() {} });
    stalled.push('v=0\r\n');
    const pending = fetch(`${gw.url}/v1/realtime/calls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/sdp' },
      body: Readable.toWeb(stalled) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    // While the slow setup holds the only slot, another caller is refused.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expectText(await post(gw.url, await offer(), 'application/sdp'), 429, 'too many active calls');
    await expectText(await pending, 400, 'invalid WebRTC offer');
    stalled.destroy();
    expect(gw.app.voiceCalls.pendingCount).toBe(0);
    expect((await post(gw.url, await offer(), 'application/sdp')).status).toBe(201);
    await gw.app.voiceCalls.closeAll('done');
  });
});

describe('call lifetime', () => {
  it('closes a call whose peer never connects at the setup deadline and frees its slot', async () => {
    const deadlineMs = 400;
    const gw = await gateway({ maxCalls: 1, callSetupTimeoutMs: deadlineMs });
    // A valid offer from a peer that never applies the answer: ICE/DTLS can never complete.
    const sdp = await offer();
    const startedAt = performance.now();
    const response = await post(gw.url, sdp, 'application/sdp');
    expect(response.status).toBe(201);
    expect(gw.app.voiceCalls.activeCount).toBe(1);
    const id = (response.headers.get('location') ?? '').split('/').pop() ?? '';
    const call = gw.app.voiceCalls.get(id) as { closed: Promise<void> } | undefined;
    expect(call).toBeDefined();
    // The close must come from the deadline, not from some later timeout: bound it well within deadline + 1.5 s.
    const boundMs = deadlineMs + 1500;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      call?.closed.then(() => 'closed'),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still open'), boundMs))),
    ]);
    clearTimeout(timer);
    expect(outcome).toBe('closed');
    expect(performance.now() - startedAt).toBeLessThan(boundMs);
    expect(gw.app.voiceCalls.activeCount).toBe(0);
  });

  it('closes a connected call after HERMES_REALTIME_MAX_CALL_SECONDS', async () => {
    const gw = await gateway({ maxCallSeconds: 1 });
    const client = await RealtimeClient.connect({ baseUrl: gw.url, apiKey: KEY });
    try {
      expect(gw.app.voiceCalls.activeCount).toBe(1);
      const call = gw.app.voiceCalls.get(client.callId) as { closed: Promise<void> } | undefined;
      await call?.closed;
      expect(gw.app.voiceCalls.activeCount).toBe(0);
    } finally {
      await client.close();
    }
  });
});

describe('signed internal proxy identity', () => {
  it('reproduces the cross-language HMAC fixture', () => {
    const payload = proxySignaturePayload({
      timestamp: '1787900000',
      callId: 'rt_12345678',
      principal: 'dXNlci1h',
      sdp: 'v=0\r\n',
      sessionJson: '{"type":"realtime"}',
    });
    expect(signProxyPayload('fixture-secret', payload)).toBe(
      'c1cdd493ff293612f1140d867040dccdcd9b17478c300be6108ec7ee754da6e1',
    );
  });

  it('verifies the fixture headers and derives the kortexa identity; refuses skew, partial headers and a missing key', () => {
    const headers = {
      'x-kortexa-internal-principal': 'dXNlci1h',
      'x-kortexa-internal-call-id': 'rt_12345678',
      'x-kortexa-internal-timestamp': '1787900000',
      'x-kortexa-internal-signature': 'v1=c1cdd493ff293612f1140d867040dccdcd9b17478c300be6108ec7ee754da6e1',
    };
    const input = {
      headers,
      signingKey: 'fixture-secret',
      sdp: 'v=0\r\n',
      sessionJson: '{"type":"realtime"}',
      nowMs: 1787900000_000 + 29_000,
      replayGuard: new ProxyReplayGuard(() => 0),
    };
    const verdict = verifyProxyIdentity(input);
    expect(verdict.kind).toBe('verified');
    // sha256("user-a")[:24]
    expect(verdict).toEqual({ kind: 'verified', identity: expect.stringMatching(/^kortexa-[0-9a-f]{24}$/) });
    expect(verifyProxyIdentity({ ...input, replayGuard: new ProxyReplayGuard(() => 0) })).toEqual(verdict);
    expect(verifyProxyIdentity({ ...input, nowMs: 1787900000_000 + 31_000 }).kind).toBe('invalid');
    expect(verifyProxyIdentity({ ...input, signingKey: null }).kind).toBe('invalid');
    expect(verifyProxyIdentity({ ...input, sdp: 'v=1\r\n', replayGuard: new ProxyReplayGuard(() => 0) }).kind).toBe(
      'invalid',
    );
    const { ['x-kortexa-internal-signature']: _dropped, ...partial } = headers;
    expect(verifyProxyIdentity({ ...input, headers: partial }).kind).toBe('invalid');
    expect(verifyProxyIdentity({ ...input, headers: {} })).toEqual({ kind: 'anonymous', identity: 'webrtc-client' });
    for (const bad of [
      { 'x-kortexa-internal-call-id': 'rt_short' },
      { 'x-kortexa-internal-principal': 'not base64!' },
      { 'x-kortexa-internal-signature': 'v2=00' },
    ])
      expect(verifyProxyIdentity({ ...input, headers: { ...headers, ...bad } }).kind).toBe('invalid');
  });

  it('on the wire: 201 for a signed setup, 401 invalid internal proxy metadata, 409 on replay within 60 s', async () => {
    const now = Date.UTC(2026, 0, 1);
    const gw = await gateway({ proxySigningKey: 'proxy-key' }, () => now);
    const sdp = await offer();
    const session = '{"type":"realtime"}';
    const sign = (callId: string) => {
      const timestamp = String(Math.floor(now / 1000));
      const principal = Buffer.from('alice@example').toString('base64url');
      const signature = signProxyPayload(
        'proxy-key',
        proxySignaturePayload({ timestamp, callId, principal, sdp, sessionJson: session }),
      );
      return {
        'x-kortexa-internal-principal': principal,
        'x-kortexa-internal-call-id': callId,
        'x-kortexa-internal-timestamp': timestamp,
        'x-kortexa-internal-signature': `v1=${signature}`,
      };
    };
    const form = multipart([
      { name: 'sdp', value: sdp },
      { name: 'session', value: session },
    ]);
    const ok = await post(gw.url, form.body, form.contentType, sign('rt_call_00000001'));
    expect(ok.status).toBe(201);
    await expectText(
      await post(gw.url, form.body, form.contentType, sign('rt_call_00000001')),
      409,
      'internal proxy call was already used',
    );
    const forged = { ...sign('rt_call_00000002'), 'x-kortexa-internal-principal': 'Ym9i' };
    await expectText(await post(gw.url, form.body, form.contentType, forged), 401, 'invalid internal proxy metadata');
    const plain = await gateway();
    await expectText(
      await post(plain.url, form.body, form.contentType, sign('rt_call_00000003')),
      401,
      'invalid internal proxy metadata',
    );
    await gw.app.voiceCalls.closeAll('done');
  });
});
