import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { memoryLogger } from '../../src/log.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { LoopbackDouble } from '../support/loopback-server.js';

const PREFIX = '/api/plugins/conduit_push';
const CLOCK_START = Date.UTC(2026, 11, 2, 11, 0, 0);
const ACCOUNT_ID = 'acct-3f1c9e7d-chatgpt-account';
const STORED_ACCOUNT_ID = 'acct-stored-beside-the-token';
const REFRESH_TOKEN = 'rt_single-use-refresh-token-never-touched';
const OWN_KEY = 'sk-proj-own-gpt-live-key-0123456789abcdef';
const VOICE_KEY = 'sk-proj-voice-tools-key-0123456789abcdef';
const OPENAI_KEY = 'sk-proj-openai-api-key-0123456789abcdef';
const OFFER =
  'v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n';
const ANSWER =
  'v=0\r\no=- 1 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n';
const CALLS_PATH = '/backend-api/codex/realtime/calls';

/** A JWT as OpenAI's auth service issues Codex access tokens (only the claims read here). */
function jwt(claims: Record<string, unknown>, signature: string): string {
  return [
    Buffer.from('{"alg":"RS256","typ":"JWT"}').toString('base64url'),
    Buffer.from(JSON.stringify(claims)).toString('base64url'),
    Buffer.from(signature).toString('base64url'),
  ].join('.');
}
const THIRTY_DAYS_S = 30 * 86_400;
const SIGN_IN = jwt(
  {
    exp: CLOCK_START / 1000 + THIRTY_DAYS_S,
    'https://api.openai.com/auth': { chatgpt_account_id: ACCOUNT_ID, chatgpt_plan_type: 'plus' },
  },
  'signature-of-the-working-codex-sign-in',
);
const POOLED_SIGN_IN = jwt({ exp: CLOCK_START / 1000 + THIRTY_DAYS_S }, 'signature-of-the-pooled-sign-in');
const EXPIRED_SIGN_IN = jwt(
  { exp: CLOCK_START / 1000 - 3600, 'https://api.openai.com/auth': { chatgpt_account_id: ACCOUNT_ID } },
  'signature-of-the-expired-sign-in',
);
const SECRETS = [
  SIGN_IN,
  POOLED_SIGN_IN,
  EXPIRED_SIGN_IN,
  ACCOUNT_ID,
  STORED_ACCOUNT_ID,
  REFRESH_TOKEN,
  OWN_KEY,
  VOICE_KEY,
  OPENAI_KEY,
];

/** One request a stand-in received, reported as it arrives so a test waits on it instead of sleeping. */
interface OfferCall {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}
interface OfferReply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Drops the connection without answering (an outage). */
  drop?: boolean;
}
type OfferAnswerer = (call: OfferCall) => OfferReply | Promise<OfferReply>;

/** An OpenAI endpoint that takes an SDP offer, on loopback: records each call and answers as told. */
class OfferStandIn extends LoopbackDouble {
  readonly calls: OfferCall[] = [];
  private readonly waiting: ((call: OfferCall) => void)[] = [];
  constructor(public answer: OfferAnswerer) {
    super();
  }
  nextCall(): Promise<OfferCall> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      body = {};
    }
    const call: OfferCall = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
    this.calls.push(call);
    this.waiting.shift()?.(call);
    const reply = await this.answer(call);
    if (reply.drop) {
      res.socket?.destroy();
      return;
    }
    res.writeHead(reply.status, reply.headers ?? {});
    res.end(reply.body ?? '');
  }
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** True when a `session` object has the shape both GPT-Live endpoints take. */
function wellFormedSession(value: unknown): boolean {
  const session = record(value);
  const voice = record(record(session.audio).output).voice;
  return (
    typeof session.model === 'string' &&
    typeof session.instructions === 'string' &&
    typeof voice === 'string' &&
    record(session.delegation).type === 'client'
  );
}

/**
 * The Codex voice service (`POST https://chatgpt.com/backend-api/codex/realtime/calls?intent=quicksilver&architecture=avas`):
 * the sign-in as bearer, the account in `ChatGPT-Account-Id`, `OpenAI-Alpha: quicksilver=v2`, JSON
 * `{sdp, session}`; answered 201 with the SDP answer as the body and the call in `Location`.
 */
function codexCalls(callId = 'rtc_u1Zk3fQx9_aB-7'): OfferAnswerer {
  return (call) => {
    if (call.method !== 'POST' || call.url !== `${CALLS_PATH}?intent=quicksilver&architecture=avas`) {
      return { status: 404, body: '{"detail":"Not Found"}' };
    }
    const accounts: Record<string, string> = { [SIGN_IN]: ACCOUNT_ID, [POOLED_SIGN_IN]: STORED_ACCOUNT_ID };
    const bearer = call.headers.authorization?.replace(/^Bearer /, '') ?? '';
    if (!(bearer in accounts)) return { status: 401, body: '{"detail":"Could not validate your credentials"}' };
    if (call.headers['chatgpt-account-id'] !== accounts[bearer]) return { status: 403, body: '{"detail":"account"}' };
    if (call.headers['openai-alpha'] !== 'quicksilver=v2') return { status: 400, body: '{"detail":"alpha"}' };
    if (call.headers['content-type'] !== 'application/json') return { status: 415, body: '{"detail":"type"}' };
    if (
      typeof call.body.sdp !== 'string' ||
      !call.body.sdp.startsWith('v=0') ||
      !wellFormedSession(call.body.session)
    ) {
      return { status: 400, body: '{"detail":"Invalid request"}' };
    }
    return {
      status: 201,
      headers: { 'content-type': 'application/sdp', location: `${CALLS_PATH}/${callId}` },
      body: ANSWER,
    };
  };
}

/**
 * OpenAI's GPT-Live API (`POST /v1/live/sessions`): a bearer API key, JSON `{session, transport: {type:
 * "webrtc", sdp}}`, answered `{session: {id}, transport: {type: "webrtc", sdp}}`; a wrong key gets 401
 * `invalid_api_key` with a message that quotes part of the key.
 */
function openAiLiveSessions(...keys: string[]): OfferAnswerer {
  return (call) => {
    if (call.method !== 'POST' || call.url !== '/v1/live/sessions') {
      return { status: 404, body: JSON.stringify({ error: { message: 'Not found', type: 'invalid_request_error' } }) };
    }
    const bearer = call.headers.authorization?.replace(/^Bearer /, '') ?? '';
    if (!keys.includes(bearer)) {
      return {
        status: 401,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          error: {
            message: `Incorrect API key provided: ${bearer.slice(0, 12)}...`,
            type: 'invalid_request_error',
            code: 'invalid_api_key',
          },
        }),
      };
    }
    const transport = record(call.body.transport);
    if (
      call.headers['content-type'] !== 'application/json' ||
      transport.type !== 'webrtc' ||
      typeof transport.sdp !== 'string' ||
      !wellFormedSession(call.body.session)
    ) {
      return {
        status: 400,
        body: JSON.stringify({ error: { message: 'Invalid body', type: 'invalid_request_error' } }),
      };
    }
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ session: { id: 'live_68f0c2a1b3' }, transport: { type: 'webrtc', sdp: ANSWER } }),
    };
  };
}

const home = tempHermesHome();
const chatgpt = new OfferStandIn(codexCalls());
const openai = new OfferStandIn(openAiLiveSessions(OWN_KEY, VOICE_KEY, OPENAI_KEY));
const clock = new ManualClock(CLOCK_START);
const timers = new ManualTimers();
const log = memoryLogger();
/** Every response body the tests received, scanned at the end for a credential. */
const answered: string[] = [];
let host: Host & { url: string };

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function call(method: 'GET' | 'POST', route: string, body?: unknown, raw?: string): Promise<Answer> {
  const response = await fetch(host.url + PREFIX + route, {
    method,
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    ...(raw !== undefined ? { body: raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  answered.push(text);
  return { status: response.status, headers: response.headers, body: JSON.parse(text) as Record<string, unknown> };
}

const status = (profile = 'work'): Promise<Answer> => call('GET', `/gpt-live/status?profile=${profile}`);
const session = (body: Record<string, unknown>, profile = 'work'): Promise<Answer> =>
  call('POST', `/gpt-live/session?profile=${profile}`, body);

function authJson(file: string, content: unknown): void {
  writeFileSync(file, JSON.stringify(content));
}

let apiProfiles = 0;
/** A fresh profile for one API-billing test (the daily count is per profile and per day). */
function apiProfile(gptLive: string, env = ''): string {
  apiProfiles += 1;
  const name = `api-${apiProfiles}`;
  const dir = path.join(home.root, 'profiles', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'config.yaml'), `voice:\n  gpt_live:\n${gptLive.replace(/^/gm, '    ')}\n`);
  writeFileSync(path.join(dir, '.env'), env);
  return name;
}
const ALLOWED = 'conduit_api_billing: true';

const PERSONA_START = "You are the voice of the user's Hermes agent";
const WAIT_POLICY =
  'Opening policy: do not speak first. When the call starts, stay silent until the user speaks, then answer what they said. This applies whatever the persona above says.';
const greetPolicy = (say: string) =>
  `Opening policy: speak first. As soon as the call starts, greet the user in one short sentence so they know you're there and listening.${say} Then wait for them. This applies whatever the persona above says.`;

function sentSession(upstream: OfferCall): Record<string, unknown> {
  return record(upstream.body.session);
}
function sentInstructions(upstream: OfferCall): string {
  return String(sentSession(upstream).instructions);
}

beforeAll(async () => {
  const work = path.join(home.root, 'profiles', 'work');
  authJson(path.join(work, 'auth.json'), {
    version: 1,
    providers: {
      'openai-codex': { tokens: { access_token: SIGN_IN, refresh_token: REFRESH_TOKEN }, auth_mode: 'chatgpt' },
    },
  });
  writeFileSync(
    path.join(work, 'config.yaml'),
    'voice:\n  gpt_live:\n    subscription_model: gpt-live-1-codex-work\n    subscription_voice: Ember\n    instructions: "  Call the user Sam.  "\n',
  );
  // A pooled sign-in whose token carries no account claim: the stored account_id is used.
  mkdirSync(path.join(home.root, 'profiles', 'pooled'));
  authJson(path.join(home.root, 'profiles', 'pooled', 'auth.json'), {
    credential_pool: {
      'openai-codex': [{ label: 'old' }, { access_token: POOLED_SIGN_IN, account_id: STORED_ACCOUNT_ID }],
    },
  });
  mkdirSync(path.join(home.root, 'profiles', 'expired'));
  authJson(path.join(home.root, 'profiles', 'expired', 'auth.json'), {
    providers: { 'openai-codex': { tokens: { access_token: EXPIRED_SIGN_IN, refresh_token: REFRESH_TOKEN } } },
  });
  mkdirSync(path.join(home.root, 'profiles', 'noaccount'));
  authJson(path.join(home.root, 'profiles', 'noaccount', 'auth.json'), {
    providers: { 'openai-codex': { tokens: { access_token: POOLED_SIGN_IN } } },
  });
  mkdirSync(path.join(home.root, 'profiles', 'nokey'));
  await chatgpt.start();
  await openai.start();
  host = await startHost(
    testConfig(home.root, { clock, timers, log, upstreams: { chatgpt: chatgpt.url, openai: openai.url } }),
  );
});
afterAll(async () => {
  await host.app.close();
  await chatgpt.stop();
  await openai.stop();
  home.cleanup();
});
beforeEach(() => {
  // A fresh minute for every test: the limiter's window is the injected clock's.
  clock.advance(60_000);
  chatgpt.answer = codexCalls();
  openai.answer = openAiLiveSessions(OWN_KEY, VOICE_KEY, OPENAI_KEY);
});

const API_DEFAULTS = {
  auth: 'api',
  enabled: false,
  available: false,
  reason: 'API billing is not allowed for this profile (set voice.gpt_live.conduit_api_billing: true)',
  model: 'gpt-live-1',
  voice: 'marin',
  daily_limit: 20,
  host: 'api.openai.com',
};

describe('GET /gpt-live/status', () => {
  it("is available with the profile's own Codex sign-in and settings, the API path reported apart", async () => {
    const { status: code, body, headers } = await status('work');
    expect(code).toBe(200);
    expect(headers.get('cache-control')).toBe('no-store');
    expect(body).toEqual({
      ok: true,
      auth: 'subscription',
      model: 'gpt-live-1-codex-work',
      voice: 'ember',
      source: 'plugin',
      available: true,
      reason: null,
      api: API_DEFAULTS,
    });
  });

  it('says how to sign in when there is no Codex sign-in, with the defaults', async () => {
    const { body } = await status('nokey');
    expect(body).toMatchObject({
      model: 'gpt-live-1-codex',
      voice: 'cove',
      available: false,
      reason: 'GPT-Live needs a working Codex sign-in on the Hermes host. Run `hermes auth` and choose OpenAI Codex.',
    });
  });

  it('is unavailable with an expired sign-in (never refreshed here) or one without an account', async () => {
    expect((await status('expired')).body).toMatchObject({
      available: false,
      reason: expect.stringMatching(/^The Codex sign-in on the Hermes host has expired\./),
    });
    expect((await status('noaccount')).body).toMatchObject({
      available: false,
      reason: expect.stringMatching(/names no ChatGPT account/),
    });
  });

  it("falls back to the root home's sign-in, which the profiles share", async () => {
    const rootAuth = path.join(home.root, 'auth.json');
    authJson(rootAuth, { providers: { 'openai-codex': { tokens: { access_token: SIGN_IN } } } });
    try {
      expect((await status('nokey')).body).toMatchObject({ available: true, reason: null });
      expect((await status('default')).body).toMatchObject({ available: true, reason: null });
    } finally {
      rmSync(rootAuth);
    }
    expect((await status('nokey')).body).toMatchObject({ available: false });
  });

  it('reports the API path as available once the profile allows it and has a key', async () => {
    const name = apiProfile(
      `${ALLOWED}\nconduit_api_daily_calls: 5\nmodel: gpt-live-1-mini\nvoice: Cedar`,
      `OPENAI_API_KEY=${OPENAI_KEY}\n`,
    );
    expect((await status(name)).body.api).toEqual({
      auth: 'api',
      enabled: true,
      available: true,
      reason: null,
      model: 'gpt-live-1-mini',
      voice: 'cedar',
      daily_limit: 5,
      host: 'api.openai.com',
    });
  });

  it('answers 503 for a profile that cannot be resolved, on both routes, asking nobody', async () => {
    const before = chatgpt.calls.length + openai.calls.length;
    for (const name of ['ghost', 'Bad!Name', '..']) {
      const q = encodeURIComponent(name);
      expect((await call('GET', `/gpt-live/status?profile=${q}`)).status).toBe(503);
      const refused = await call('POST', `/gpt-live/session?profile=${q}`, { sdp: OFFER });
      expect([name, refused.status, typeof refused.body.detail]).toEqual([name, 503, 'string']);
    }
    expect(chatgpt.calls.length + openai.calls.length).toBe(before);
  });
});

describe('POST /gpt-live/session on the subscription', () => {
  it('posts the offer to the Codex voice service with the sign-in and answers the SDP and call id', async () => {
    const sent = chatgpt.nextCall();
    const { status: code, body, headers } = await session({ sdp: OFFER });
    const upstream = await sent;
    expect(code).toBe(200);
    expect(headers.get('cache-control')).toBe('no-store');
    expect(upstream.url).toBe(`${CALLS_PATH}?intent=quicksilver&architecture=avas`);
    expect(upstream.headers.authorization).toBe(`Bearer ${SIGN_IN}`);
    expect(upstream.headers['chatgpt-account-id']).toBe(ACCOUNT_ID);
    expect(upstream.headers['openai-alpha']).toBe('quicksilver=v2');
    expect(upstream.headers['content-type']).toBe('application/json');
    const instructions = sentInstructions(upstream);
    expect(upstream.body).toEqual({
      sdp: OFFER,
      session: {
        model: 'gpt-live-1-codex-work',
        instructions,
        audio: { output: { voice: 'ember' } },
        delegation: { type: 'client' },
      },
    });
    const parts = instructions.split('\n\n');
    expect(parts).toHaveLength(3);
    expect(parts[0]).toMatch(new RegExp(`^${PERSONA_START}`));
    expect(parts.slice(1)).toEqual(['Call the user Sam.', WAIT_POLICY]);
    expect(body).toEqual({
      ok: true,
      auth: 'subscription',
      session: { id: 'rtc_u1Zk3fQx9_aB-7' },
      transport: { type: 'webrtc', sdp: ANSWER },
      source: 'plugin',
      voice: 'ember',
      briefing_applied: false,
      greeting_applied: false,
    });
    // The subscription is never billed to the API.
    expect(openai.calls.filter((c) => c.headers.authorization?.includes(SIGN_IN))).toEqual([]);
  });

  it('adds the trimmed briefing and a normalised greeting, quoted in the opening policy', async () => {
    const sent = chatgpt.nextCall();
    const { body } = await session({
      sdp: OFFER,
      briefing: '  Conduit rules: keep answers short.  ',
      greeting: '  He said "hi"\u0007\tthere\u00a0\u200b  friend\n',
    });
    const instructions = sentInstructions(await sent);
    expect(instructions.split('\n\n').slice(1)).toEqual([
      'Call the user Sam.',
      'Conduit rules: keep answers short.',
      greetPolicy(` Say: "He said 'hi' there friend"`),
    ]);
    expect(body).toMatchObject({ briefing_applied: true, greeting_applied: true });
  });

  it('greets without set words for an empty greeting, and treats a blank briefing as none', async () => {
    const sent = chatgpt.nextCall();
    const { body } = await session({ sdp: OFFER, greeting: '', briefing: '   ', history: null, voice: null });
    expect(sentInstructions(await sent).endsWith(greetPolicy(''))).toBe(true);
    expect(body).toMatchObject({ briefing_applied: false, greeting_applied: true, voice: 'ember' });
  });

  it('opens a call Hermes placed with the briefing, ignoring any greeting', async () => {
    const sent = chatgpt.nextCall();
    const { body } = await session({
      sdp: OFFER,
      call_opening: true,
      greeting: 'Hello there',
      briefing: 'You are calling because the build finished.',
    });
    const policy =
      sentInstructions(await sent)
        .split('\n\n')
        .pop() ?? '';
    expect(policy).toMatch(/^Opening policy: speak first\. You placed this call/);
    expect(policy).toContain('the way the briefing above says');
    expect(policy).not.toContain('Hello there');
    expect(body).toMatchObject({ briefing_applied: true, greeting_applied: true });

    const unbriefed = chatgpt.nextCall();
    await session({ sdp: OFFER, call_opening: true });
    expect(sentInstructions(await unbriefed)).toContain(
      "say in one short sentence that you're calling them, without guessing why",
    );
  });

  it('keeps the last 40 history items and uses the voice asked for, lowercased', async () => {
    const history = Array.from({ length: 45 }, (_, n) => ({
      type: 'message',
      role: n % 2 ? 'assistant' : 'user',
      content: [{ type: 'input_text', text: `turn ${n}` }],
    }));
    const sent = chatgpt.nextCall();
    const { body } = await session({ sdp: OFFER, history, voice: 'Juniper' });
    const upstream = await sent;
    expect(sentSession(upstream).initial_items).toEqual(history.slice(5));
    expect(record(record(sentSession(upstream).audio).output).voice).toBe('juniper');
    expect(body.voice).toBe('juniper');
  });

  it("uses a pooled sign-in's stored account id", async () => {
    const sent = chatgpt.nextCall();
    const { status: code } = await session({ sdp: OFFER }, 'pooled');
    expect(code).toBe(200);
    const upstream = await sent;
    expect(upstream.headers.authorization).toBe(`Bearer ${POOLED_SIGN_IN}`);
    expect(upstream.headers['chatgpt-account-id']).toBe(STORED_ACCOUNT_ID);
  });

  it('refuses every field the reference refuses, before counting or calling anything', async () => {
    const cases: [unknown, string][] = [
      [[OFFER], 'Request body must be a JSON object'],
      ['v=0', 'Request body must be a JSON object'],
      [{}, 'sdp must be a WebRTC SDP offer'],
      [{ sdp: 'o=- 1 2 IN IP4' }, 'sdp must be a WebRTC SDP offer'],
      [{ sdp: 42 }, 'sdp must be a WebRTC SDP offer'],
      [{ sdp: OFFER, history: { role: 'user' } }, 'history must be a list of conversation items'],
      [{ sdp: OFFER, history: [{ role: 'user' }, 'text'] }, 'history must be a list of conversation items'],
      [{ sdp: OFFER, voice: '1cove' }, 'voice must be a voice name such as cove'],
      [{ sdp: OFFER, voice: 'c'.repeat(33) }, 'voice must be a voice name such as cove'],
      [{ sdp: OFFER, voice: 7 }, 'voice must be a voice name such as cove'],
      [{ sdp: OFFER, briefing: ['rules'] }, 'briefing must be text'],
      [{ sdp: OFFER, briefing: 'b'.repeat(32_769) }, 'briefing is too long'],
      [{ sdp: OFFER, greeting: 5 }, 'greeting must be text'],
      [{ sdp: OFFER, greeting: ' '.repeat(801) }, 'greeting is too long'],
      [{ sdp: OFFER, greeting: 'g'.repeat(201) }, 'greeting is too long'],
      [{ sdp: OFFER, call_opening: 'yes' }, 'call_opening must be true or false'],
      [{ sdp: OFFER, billing: 'card' }, 'billing must be "subscription" or "api"'],
    ];
    const before = chatgpt.calls.length;
    for (const [body, detail] of cases) {
      const answer = await session(body as Record<string, unknown>);
      expect([detail, answer.status, answer.body]).toEqual([detail, 400, { detail }]);
    }
    const notJson = await call('POST', '/gpt-live/session?profile=work', undefined, '{"sdp":');
    expect([notJson.status, notJson.body]).toEqual([400, { detail: 'Request body is not JSON' }]);
    const tooLarge = await session({ sdp: OFFER, briefing: 'x'.repeat(260 * 1024) });
    expect([tooLarge.status, tooLarge.body]).toEqual([413, { detail: 'Request body is too large' }]);
    // Exactly at the bounds is accepted: 32,768 briefing characters, 200 greeting characters (800 raw).
    const edge = await session({
      sdp: OFFER,
      briefing: ` ${'b'.repeat(32_768)} `,
      greeting: `${' '.repeat(599)}${'g'.repeat(200)} `,
    });
    expect(edge.status).toBe(200);
    expect(chatgpt.calls.length).toBe(before + 1);
  });

  it('caps sessions at 10 a minute per profile; another profile and the next minute are unaffected', async () => {
    const before = chatgpt.calls.length;
    for (let i = 0; i < 10; i += 1) expect((await session({ sdp: OFFER })).status).toBe(200);
    const refused = await session({ sdp: OFFER }, 'work');
    expect([refused.status, refused.body]).toEqual([
      429,
      { detail: 'Too many GPT-Live session requests; try again shortly' },
    ]);
    expect(chatgpt.calls.length - before).toBe(10);
    expect((await session({ sdp: OFFER }, 'pooled')).status).toBe(200);
    clock.advance(60_000);
    expect((await session({ sdp: OFFER })).status).toBe(200);
  });

  it('answers 503 without a usable sign-in and never tries the API key instead', async () => {
    const before = chatgpt.calls.length + openai.calls.length;
    const missing = await session({ sdp: OFFER }, 'nokey');
    expect([missing.status, missing.body.detail]).toEqual([
      503,
      'GPT-Live needs a working Codex sign-in on the Hermes host. Run `hermes auth` and choose OpenAI Codex. No API fallback was used.',
    ]);
    const expired = await session({ sdp: OFFER }, 'expired');
    expect(expired.status).toBe(503);
    expect(String(expired.body.detail)).toMatch(/has expired\..* No API fallback was used\.$/);
    expect(chatgpt.calls.length + openai.calls.length).toBe(before);
  });

  it("maps the Codex service's refusals, never passing its body on", async () => {
    const cases: [number, number, string][] = [
      [
        401,
        502,
        "GPT-Live session was rejected (HTTP 401); check the Codex sign-in and the account's voice access. No API fallback was used.",
      ],
      [
        403,
        502,
        "GPT-Live session was rejected (HTTP 403); check the Codex sign-in and the account's voice access. No API fallback was used.",
      ],
      [
        429,
        429,
        'ChatGPT is limiting GPT-Live sessions for this account (HTTP 429); try again shortly. No API fallback was used.',
      ],
      [500, 502, 'The Codex voice service failed (HTTP 500); try again shortly. No API fallback was used.'],
      [503, 502, 'The Codex voice service failed (HTTP 503); try again shortly. No API fallback was used.'],
    ];
    for (const [upstream, expected, detail] of cases) {
      chatgpt.answer = () => ({ status: upstream, body: '{"detail":"upstream secret text"}' });
      const answer = await session({ sdp: OFFER });
      expect([upstream, answer.status, answer.body]).toEqual([upstream, expected, { detail }]);
    }
    expect(log.lines.some((line) => line.includes('gpt-live session failed') && line.includes('429'))).toBe(true);
  });

  it('never follows a redirect, so the sign-in is never replayed to another origin', async () => {
    const before = chatgpt.calls.length;
    chatgpt.answer = () => ({ status: 307, headers: { location: `${chatgpt.url}/elsewhere` } });
    const answer = await session({ sdp: OFFER });
    expect(answer.status).toBe(502);
    expect(answer.body.detail).toMatch(/^GPT-Live session was rejected \(HTTP 307\)/);
    expect(chatgpt.calls.length - before).toBe(1);
  });

  it('answers 502 when the Codex service cannot be reached', async () => {
    chatgpt.answer = () => ({ status: 0, drop: true });
    const answer = await session({ sdp: OFFER });
    expect([answer.status, answer.body]).toEqual([
      502,
      { detail: 'Could not reach the Codex voice service. No API fallback was used.' },
    ]);
  });

  it('answers 502 for an unusable answer: a bad Location, an oversize or non-SDP body', async () => {
    const unusable = { detail: 'The Codex voice service returned an unusable answer. No API fallback was used.' };
    const replies: OfferReply[] = [
      { status: 201, body: ANSWER },
      { status: 201, headers: { location: `${CALLS_PATH}/not-a-call-id` }, body: ANSWER },
      { status: 201, headers: { location: `${CALLS_PATH}/rtc_ok/../rtc bad` }, body: ANSWER },
      { status: 201, headers: { location: `${CALLS_PATH}/rtc_ok` }, body: `${ANSWER}a=x:${'y'.repeat(64 * 1024)}\r\n` },
      { status: 201, headers: { location: `${CALLS_PATH}/rtc_ok` }, body: '<html>captive portal</html>' },
      { status: 200, headers: { location: `${CALLS_PATH}/rtc_ok` }, body: '' },
    ];
    for (const reply of replies) {
      chatgpt.answer = () => reply;
      const answer = await session({ sdp: OFFER });
      expect([answer.status, answer.body]).toEqual([502, unusable]);
    }
  });

  it('takes the call id from an absolute Location, also in its UUID form', async () => {
    const uuid = '0f8c1d2e-3a4b-4c5d-8e9f-a0b1c2d3e4f5';
    for (const [location, id] of [
      [`https://chatgpt.com${CALLS_PATH}/rtc_abc-DEF_123?x=1`, 'rtc_abc-DEF_123'],
      [`${CALLS_PATH}/${uuid}`, uuid],
    ] as const) {
      chatgpt.answer = () => ({ status: 201, headers: { location }, body: ANSWER });
      expect((await session({ sdp: OFFER })).body.session).toEqual({ id });
    }
  });

  it('answers 504 once the Codex service has not answered for 30 s, and 504 at the route deadline', async () => {
    let release: () => void = () => undefined;
    chatgpt.answer = () => new Promise((resolve) => (release = () => resolve({ status: 500 })));
    try {
      const arrived = chatgpt.nextCall();
      const pending = session({ sdp: OFFER });
      await arrived;
      await timers.untilWaiting(2);
      timers.advance(29_999);
      expect(timers.waiting).toBe(2);
      timers.advance(1);
      expect(await pending).toMatchObject({
        status: 504,
        body: { detail: 'The Codex voice service did not answer in time. No API fallback was used.' },
      });
      release();

      // Both deadlines at once: the route's own (32 s) answers first.
      const again = chatgpt.nextCall();
      const late = session({ sdp: OFFER });
      await again;
      await timers.untilWaiting(2);
      timers.advance(32_000);
      expect(await late).toMatchObject({ status: 504, body: { detail: 'GPT-Live session timed out' } });
    } finally {
      release();
    }
  });
});

describe('POST /gpt-live/session with billing: "api"', () => {
  const notUsed = ' The ChatGPT subscription was not used.';

  it('is refused (403) unless the profile sets conduit_api_billing to true exactly, asking nobody', async () => {
    const before = chatgpt.calls.length + openai.calls.length;
    for (const setting of ['', 'conduit_api_billing: false', 'conduit_api_billing: "true"', 'conduit_api_billing: 1']) {
      const name = apiProfile(setting || 'model: gpt-live-1', `OPENAI_API_KEY=${OPENAI_KEY}\n`);
      const answer = await session({ sdp: OFFER, billing: 'api' }, name);
      expect([setting, answer.status, answer.body]).toEqual([
        setting,
        403,
        {
          detail: `API billing is not allowed for this profile (set voice.gpt_live.conduit_api_billing: true).${notUsed}`,
        },
      ]);
    }
    expect(chatgpt.calls.length + openai.calls.length).toBe(before);
  });

  it('is refused (403) when the daily calls are set to 0', async () => {
    const name = apiProfile(`${ALLOWED}\nconduit_api_daily_calls: 0`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
    const answer = await session({ sdp: OFFER, billing: 'api' }, name);
    expect([answer.status, answer.body]).toEqual([
      403,
      {
        detail: `API calls are turned off for this profile (voice.gpt_live.conduit_api_daily_calls is 0).${notUsed}`,
      },
    ]);
    expect((await status(name)).body.api).toMatchObject({ enabled: true, available: false, daily_limit: 0 });
  });

  it("posts the offer to OpenAI's GPT-Live API with the key and answers auth: api", async () => {
    const name = apiProfile(`${ALLOWED}\ninstructions: Be brief.`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
    const history = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'earlier' }] }];
    const sent = openai.nextCall();
    const { status: code, body } = await session(
      { sdp: OFFER, billing: 'api', history, greeting: 'Hi', briefing: 'Rules.' },
      name,
    );
    const upstream = await sent;
    expect(code).toBe(200);
    expect(upstream.url).toBe('/v1/live/sessions');
    expect(upstream.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(upstream.headers['content-type']).toBe('application/json');
    expect(upstream.headers['chatgpt-account-id']).toBeUndefined();
    const instructions = sentInstructions(upstream);
    expect(instructions.split('\n\n').slice(1)).toEqual(['Be brief.', 'Rules.', greetPolicy(' Say: "Hi"')]);
    expect(upstream.body).toEqual({
      session: {
        model: 'gpt-live-1',
        instructions,
        audio: { output: { voice: 'marin' } },
        delegation: { type: 'client' },
        input: history,
      },
      transport: { type: 'webrtc', sdp: OFFER },
    });
    expect(body).toEqual({
      ok: true,
      auth: 'api',
      session: { id: 'live_68f0c2a1b3' },
      transport: { type: 'webrtc', sdp: ANSWER },
      source: 'plugin',
      voice: 'marin',
      briefing_applied: true,
      greeting_applied: true,
    });
  });

  it('stops at the daily cap with a 429, asking OpenAI nothing more', async () => {
    const name = apiProfile(`${ALLOWED}\nconduit_api_daily_calls: 2`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(200);
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(200);
    const before = openai.calls.length;
    const capped = await session({ sdp: OFFER, billing: 'api' }, name);
    expect([capped.status, capped.body]).toEqual([
      429,
      {
        detail: `This profile has started its 2 API-billed GPT-Live calls for today (voice.gpt_live.conduit_api_daily_calls).${notUsed}`,
      },
    ]);
    expect(openai.calls.length).toBe(before);
    // The subscription still works: the cap is the API path's alone.
    expect((await session({ sdp: OFFER }, 'work')).status).toBe(200);
  });

  it('gives the slot back when OpenAI refuses or cannot be reached, mapping 401 and 429', async () => {
    const name = apiProfile(`${ALLOWED}\nconduit_api_daily_calls: 1`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
    const cases: [OfferReply, number, string][] = [
      [
        { status: 401, body: JSON.stringify({ error: { message: `Incorrect API key provided: ${OPENAI_KEY}` } }) },
        502,
        'OpenAI rejected the API key (HTTP 401).',
      ],
      [
        { status: 429, body: '{"error":{"message":"quota"}}' },
        429,
        'OpenAI is limiting this API key (HTTP 429); try again shortly.',
      ],
      [{ status: 500, body: '{}' }, 502, "OpenAI's GPT-Live service failed (HTTP 500); try again shortly."],
      [{ status: 400, body: '{}' }, 502, 'OpenAI refused the GPT-Live session (HTTP 400).'],
      [{ status: 0, drop: true }, 502, 'Could not reach OpenAI.'],
    ];
    for (const [reply, expected, detail] of cases) {
      openai.answer = () => reply;
      const answer = await session({ sdp: OFFER, billing: 'api' }, name);
      expect([reply.status, answer.status, answer.body]).toEqual([
        reply.status,
        expected,
        { detail: detail + notUsed },
      ]);
    }
    // Five refusals later the one daily slot is still free.
    openai.answer = openAiLiveSessions(OPENAI_KEY);
    clock.advance(60_000);
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(200);
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(429);
  });

  it('gives the slot back when OpenAI never answers (30 s), and on the route deadline too', async () => {
    const name = apiProfile(`${ALLOWED}\nconduit_api_daily_calls: 1`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
    const releases: (() => void)[] = [];
    openai.answer = () => new Promise((resolve) => releases.push(() => resolve({ status: 500 })));
    try {
      for (const [advance, detail] of [
        [30_000, `OpenAI did not answer in time.${notUsed}`],
        [32_000, `GPT-Live session timed out.${notUsed}`],
      ] as const) {
        const arrived = openai.nextCall();
        const pending = session({ sdp: OFFER, billing: 'api' }, name);
        await arrived;
        await timers.untilWaiting(2);
        timers.advance(advance);
        expect(await pending).toMatchObject({ status: 504, body: { detail } });
      }
    } finally {
      for (const release of releases) release();
    }
    openai.answer = openAiLiveSessions(OPENAI_KEY);
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(200);
  });

  it('keeps the slot once OpenAI said yes, even when its answer is unusable', async () => {
    const name = apiProfile(`${ALLOWED}\nconduit_api_daily_calls: 2`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
    const unusable = { detail: `OpenAI returned an unusable GPT-Live answer.${notUsed}` };
    for (const reply of [
      { status: 200, body: '<html>gateway</html>' },
      {
        status: 200,
        body: JSON.stringify({
          session: { id: 'live_1' },
          transport: { type: 'webrtc', sdp: `v=0${'a'.repeat(90 * 1024)}` },
        }),
      },
    ]) {
      openai.answer = () => reply;
      expect(await session({ sdp: OFFER, billing: 'api' }, name)).toMatchObject({ status: 502, body: unusable });
    }
    openai.answer = openAiLiveSessions(OPENAI_KEY);
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(429);
  });

  it("starts a new count each day, and a slot given back after midnight does not free the new day's", async () => {
    const name = apiProfile(`${ALLOWED}\nconduit_api_daily_calls: 1`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
    let release: () => void = () => undefined;
    openai.answer = () => new Promise((resolve) => (release = () => resolve({ status: 503 })));
    const arrived = openai.nextCall();
    const hung = session({ sdp: OFFER, billing: 'api' }, name);
    await arrived;
    openai.answer = openAiLiveSessions(OPENAI_KEY);
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(429);
    clock.advance(24 * 3600_000);
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(200);
    // Yesterday's call is refused now: its slot was yesterday's, so today's stays used.
    release();
    expect((await hung).status).toBe(502);
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(429);
  });

  it('resolves the key as Hermes desktop does: api_key, then VOICE_TOOLS_OPENAI_KEY, then OPENAI_API_KEY', async () => {
    const both = `VOICE_TOOLS_OPENAI_KEY=${VOICE_KEY}\nOPENAI_API_KEY=${OPENAI_KEY}\n`;
    for (const [gptLive, env, expected] of [
      [`${ALLOWED}\napi_key: ${OWN_KEY}`, both, OWN_KEY],
      [ALLOWED, both, VOICE_KEY],
      [ALLOWED, `OPENAI_API_KEY=${OPENAI_KEY}\n`, OPENAI_KEY],
    ] as const) {
      const sent = openai.nextCall();
      expect((await session({ sdp: OFFER, billing: 'api' }, apiProfile(gptLive, env))).status).toBe(200);
      expect((await sent).headers.authorization).toBe(`Bearer ${expected}`);
    }
    const keyless = apiProfile(ALLOWED);
    const answer = await session({ sdp: OFFER, billing: 'api' }, keyless);
    expect([answer.status, answer.body]).toEqual([
      503,
      {
        detail: `No OpenAI API key is set (voice.gpt_live.api_key, VOICE_TOOLS_OPENAI_KEY or OPENAI_API_KEY).${notUsed}`,
      },
    ]);
  });

  it('never sends a shared key to a base_url other than api.openai.com on the standard port', async () => {
    const before = openai.calls.length;
    for (const base of ['https://gateway.example.test/v1', 'https://api.openai.com:8443/v1']) {
      const name = apiProfile(`${ALLOWED}\nbase_url: ${base}`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
      const answer = await session({ sdp: OFFER, billing: 'api' }, name);
      expect(answer.status).toBe(503);
      expect(answer.body.detail).toBe(
        `voice.gpt_live.base_url is not api.openai.com, so it needs its own voice.gpt_live.api_key (OPENAI_API_KEY is only sent to OpenAI).${notUsed}`,
      );
      expect((await status(name)).body.api).toMatchObject({ available: false, host: new URL(base).hostname });
    }
    expect(openai.calls.length).toBe(before);
    // OpenAI's own base_url written out is still OpenAI.
    const explicit = apiProfile(
      `${ALLOWED}\nbase_url: https://api.openai.com:443/v1/`,
      `OPENAI_API_KEY=${OPENAI_KEY}\n`,
    );
    expect((await session({ sdp: OFFER, billing: 'api' }, explicit)).status).toBe(200);
  });

  it('refuses a base_url that is not https, or has a query or fragment; sends its own key elsewhere', async () => {
    for (const base of [
      'http://api.openai.com/v1',
      'https://api.openai.com/v1?x=1',
      'https://api.openai.com/v1#f',
      'not a url',
    ]) {
      const name = apiProfile(`${ALLOWED}\nbase_url: "${base}"`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
      const answer = await session({ sdp: OFFER, billing: 'api' }, name);
      expect([base, answer.status]).toEqual([base, 503]);
      expect(answer.body.detail).toMatch(/^voice\.gpt_live\.base_url .* The ChatGPT subscription was not used\.$/);
    }
    // Its own key may go to another host: it is tried there (nothing listens on port 1), and the slot comes back.
    const name = apiProfile(
      `${ALLOWED}\nconduit_api_daily_calls: 1\nbase_url: https://localhost:1/v1\napi_key: ${OWN_KEY}`,
    );
    expect((await status(name)).body.api).toMatchObject({ available: true, host: 'localhost' });
    for (let i = 0; i < 2; i += 1) {
      expect(await session({ sdp: OFFER, billing: 'api' }, name)).toMatchObject({
        status: 502,
        body: { detail: `Could not reach OpenAI.${notUsed}` },
      });
    }
  });

  it('never falls back to the subscription, nor the subscription to the API', async () => {
    const name = apiProfile(`${ALLOWED}\nconduit_api_daily_calls: 3`, `OPENAI_API_KEY=${OPENAI_KEY}\n`);
    authJson(path.join(home.root, 'profiles', name, 'auth.json'), {
      providers: { 'openai-codex': { tokens: { access_token: SIGN_IN } } },
    });
    const codexBefore = chatgpt.calls.length;
    openai.answer = () => ({ status: 500 });
    expect((await session({ sdp: OFFER, billing: 'api' }, name)).status).toBe(502);
    expect(chatgpt.calls.length).toBe(codexBefore);
    const apiBefore = openai.calls.length;
    chatgpt.answer = () => ({ status: 500 });
    expect((await session({ sdp: OFFER, billing: 'subscription' }, name)).body).toMatchObject({
      detail: expect.stringMatching(/No API fallback was used\.$/),
    });
    expect(openai.calls.length).toBe(apiBefore);
  });
});

describe('secrets', () => {
  it('never puts a sign-in, account id or key in a response body or a log line', () => {
    expect(answered.length).toBeGreaterThan(80);
    expect(log.lines.some((line) => line.includes('gpt-live session started'))).toBe(true);
    expect(log.lines.some((line) => line.includes('gpt-live session failed'))).toBe(true);
    for (const text of [...answered, ...log.lines]) {
      for (const secret of SECRETS) expect(text).not.toContain(secret);
      expect(text).not.toContain(OPENAI_KEY.slice(0, 12));
    }
  });
});
