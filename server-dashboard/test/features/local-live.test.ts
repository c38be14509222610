import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readSse, type SseEvent } from '@conduit/contracts/hermes/sse-reader';
import type { Host } from '../../src/app.js';
import { WARMUP_LINE } from '../../src/features/speech-server/local-live-routes.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { memoryLogger } from '../../src/log.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import {
  openClient,
  OPENAI_REALTIME_FIRST_EVENT,
  RealtimeStandIn,
  type ReceivedFrame,
  type Reports,
  type TestClient,
  openTicketedClient,
} from '../support/realtime-stand-ins.js';

const PREFIX = '/api/plugins/conduit_push';
const MODEL = `${PREFIX}/local-live/v1`;
const PUBLIC_NAME = 'conduit.tail1234.ts.net';

const home = tempHermesHome();
/** speech-to-speech serve: the OpenAI-Realtime server the Local Live socket relays the call's audio to. */
const speech = new RealtimeStandIn(() => ({ accept: true }), OPENAI_REALTIME_FIRST_EVENT);
const clock = new ManualClock(Date.UTC(2026, 11, 4, 9, 0, 0));
const timers = new ManualTimers();
const log = memoryLogger();
/** Every key the tests saw, and every close reason and body they received, scanned at the end. */
const keysSeen: string[] = [];
const answered: string[] = [];
let host: Host & { url: string };
/** Calls a test opened, closed after it whatever happened, so one failure cannot hold the next test. */
const openCalls: AppCall[] = [];

function profileHome(profile: string): string {
  return profile === 'default' ? home.root : path.join(home.root, 'profiles', profile);
}

function setSpeechServer(profile: string): void {
  mkdirSync(profileHome(profile), { recursive: true });
  writeFileSync(
    path.join(profileHome(profile), 'config.yaml'),
    `voice:\n  speech_server:\n    url: ${JSON.stringify(`${speech.url}/v1/realtime`)}\n`,
  );
}

/** A plain HTTP request with exactly these headers (fetch will not set Host). */
function request(
  method: string,
  target: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  const url = new URL(target, host.url);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Status {
  ok: true;
  available: boolean;
  reason: string | null;
  profile: string;
  model_address: string;
  key: string | null;
  speech_server: boolean;
}

async function status(profile = 'default'): Promise<Status> {
  const response = await fetch(`${host.url}${PREFIX}/local-live/status?profile=${profile}`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as Status;
  if (body.key) keysSeen.push(body.key);
  return body;
}

async function keyOf(profile = 'default'): Promise<string> {
  const { key } = await status(profile);
  if (!key) throw new Error('no key');
  return key;
}

/** The speech server asking its model: a chat-completions request with the Local Live key. */
function askModel(key: string, body: Record<string, unknown>, route = 'chat/completions', signal?: AbortSignal) {
  return fetch(`${host.url}${MODEL}/${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

function chat(text: string, stream = false): Record<string, unknown> {
  return {
    model: 'conduit',
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
    messages: [
      { role: 'system', content: 'You are a helpful voice assistant.' },
      { role: 'user', content: 'An earlier question' },
      { role: 'assistant', content: 'An earlier answer' },
      { role: 'user', content: [{ type: 'text', text }] },
    ],
  };
}

/** Reads server-sent events as they arrive (the suite's one SSE reader): each `next()` is one event's data (parsed JSON, or `[DONE]`). */
class EventReader {
  private readonly events: AsyncGenerator<SseEvent>;

  constructor(response: Response) {
    if (!response.body) throw new Error('no body');
    this.events = readSse(response.body);
  }

  async next(): Promise<{ event: string | null; data: unknown } | null> {
    const { value, done } = await this.events.next();
    if (done) return null;
    const event = value.type === 'message' ? null : value.type;
    return { event, data: value.data === '[DONE]' ? '[DONE]' : (JSON.parse(value.data) as unknown) };
  }

  async rest(): Promise<unknown[]> {
    const out: unknown[] = [];
    for (let item = await this.next(); item; item = await this.next()) out.push(item.data);
    return out;
  }
}

/** The Conduit app's Local Live socket (through the speech-server relay), with its upstream end. */
interface AppCall {
  app: TestClient;
  upstream: { frames: Reports<ReceivedFrame>; closed: Promise<{ code: number; reason: string }> };
}

async function openCall(query = ''): Promise<AppCall> {
  const app = await openTicketedClient(host.url, `${PREFIX}/local-live/socket`, query, TEST_TOKEN);
  void app.closed.then(({ reason }) => answered.push(reason));
  const upstream = await speech.connections.next();
  // The server's first event reaching the app: the relay is open both ways.
  expect(JSON.parse((await app.frames.next()).data.toString('utf8'))).toMatchObject({ type: 'session.created' });
  const call = { app, upstream };
  openCalls.push(call);
  return call;
}

async function hangUp(call: AppCall): Promise<void> {
  call.app.socket.close();
  await call.app.closed;
  await call.upstream.closed;
}

/** The next frame the app receives, parsed. */
async function appFrame(call: AppCall): Promise<Record<string, unknown>> {
  return JSON.parse((await call.app.frames.next()).data.toString('utf8')) as Record<string, unknown>;
}

function sendFromApp(call: AppCall, frame: Record<string, unknown>): void {
  call.app.socket.send(JSON.stringify(frame));
}

beforeAll(async () => {
  await speech.start();
  setSpeechServer('default');
  setSpeechServer('work');
  mkdirSync(path.join(home.root, 'profiles', 'quiet'), { recursive: true });
  host = await startHost(testConfig(home.root, { clock, timers, log, allowedHosts: [PUBLIC_NAME] }));
});
afterAll(async () => {
  await host.app.close();
  await speech.stop();
  home.cleanup();
});
beforeEach(() => {
  // Past every per-minute window of the previous test.
  clock.advance(60_000);
});
afterEach(async () => {
  for (const call of openCalls.splice(0)) {
    call.app.socket.terminate();
    await call.upstream.closed;
  }
});

describe('GET /local-live/status and the per-profile key', () => {
  it('makes the key on first use: it names its profile, is kept 0600 in a 0700 folder, and stays the same', async () => {
    const first = await status('work');
    expect(first).toMatchObject({ ok: true, available: true, reason: null, profile: 'work', speech_server: true });
    expect(first.key).toMatch(/^cll\.work\.[A-Za-z0-9_-]{43}$/);
    expect((await status('work')).key).toBe(first.key);
    const file = path.join(profileHome('work'), 'conduit-local-live', 'key');
    expect(readFileSync(file, 'utf8').trim()).toBe(first.key);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect((await status('quiet')).speech_server).toBe(false);
    expect((await status()).key).toMatch(/^cll\.default\./);
  });

  it("gives the dashboard's address as the request reached it plus the model path", async () => {
    expect((await status()).model_address).toBe(`${host.url}${MODEL}`);
    const fronted = await request('GET', `${PREFIX}/local-live/status`, {
      host: PUBLIC_NAME,
      'x-forwarded-proto': 'https',
      authorization: `Bearer ${TEST_TOKEN}`,
    });
    expect(fronted.status).toBe(200);
    expect(fronted.headers['cache-control']).toBe('no-store');
    expect((JSON.parse(fronted.text) as Status).model_address).toBe(`https://${PUBLIC_NAME}${MODEL}`);
  });

  it('answers 503 for a profile that cannot be resolved, never the default profile’s key', async () => {
    const response = await fetch(`${host.url}${PREFIX}/local-live/status?profile=ghost`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ detail: 'Profile ghost does not exist on this host' });
  });

  it('rotation stops the old key at once and the new one works', async () => {
    const old = await keyOf('work');
    expect((await askModel(old, chat('Hello'))).status).toBe(200);
    const rotated = await fetch(`${host.url}${PREFIX}/local-live/key?profile=work`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(rotated.status).toBe(200);
    const body = (await rotated.json()) as { ok: true; profile: string; key: string };
    keysSeen.push(body.key);
    expect(body).toMatchObject({ ok: true, profile: 'work' });
    expect(body.key).not.toBe(old);
    const refused = await askModel(old, chat('Hello'));
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({
      error: { message: 'Invalid Local Live key', type: 'invalid_request_error', code: 'invalid_api_key' },
    });
    expect((await askModel(body.key, chat('Hello'))).status).toBe(200);
    expect((await status('work')).key).toBe(body.key);
  });
});

describe('the model routes take the Local Live key, and only they do', () => {
  it('refuse no key, the dashboard credential, and another profile’s key altered to name this one', async () => {
    expect((await fetch(`${host.url}${MODEL}/chat/completions`, { method: 'POST', body: '{}' })).status).toBe(401);
    // The dashboard's own credential (here the standalone bearer) is not a Local Live key.
    expect((await askModel(TEST_TOKEN, chat('Hello'))).status).toBe(401);
    expect((await askModel(TEST_TOKEN, chat('Hello'), 'responses')).status).toBe(401);
    const work = await keyOf('work');
    const secret = work.split('.')[2] ?? '';
    expect((await askModel(`cll.default.${secret}`, chat('Hello'))).status).toBe(401);
    expect((await askModel(`cll.ghost.${secret}`, chat('Hello'))).status).toBe(401);
  });

  it('the key opens no other route: plugin routes answer 401 and the sockets 4401', async () => {
    const key = await keyOf();
    for (const route of ['/local-live/status', '/grok-live/status', '/gemini-live/status', '/cron/notifications']) {
      const response = await fetch(`${host.url}${PREFIX}${route}`, { headers: { authorization: `Bearer ${key}` } });
      expect([route, response.status]).toEqual([route, 401]);
    }
    const rotate = await fetch(`${host.url}${PREFIX}/local-live/key`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(rotate.status).toBe(401);
    const socket = openClient(`${host.url.replace(/^http/, 'ws')}${PREFIX}/local-live/socket`, {
      authorization: `Bearer ${key}`,
    });
    expect(await socket.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });
    const ticket = await fetch(`${host.url}/api/auth/ws-ticket`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(ticket.status).toBe(401);
  });

  it('answers a request with no user message 400 in OpenAI’s error shape', async () => {
    const response = await askModel(await keyOf(), { model: 'x', messages: [{ role: 'system', content: 'hi' }] });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'no_user_message' } });
    const notJson = await fetch(`${host.url}${MODEL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await keyOf()}`, 'content-type': 'application/json' },
      body: '{not json',
    });
    expect(notJson.status).toBe(400);
  });
});

describe('turns with no Local Live call open', () => {
  it('answers the warmup line, whole or streamed, in both formats', async () => {
    const key = await keyOf();
    // speech-to-speech's warmup: a system and a user "Hello", not streamed.
    const warmup = await askModel(key, {
      model: 'conduit',
      messages: [
        { role: 'system', content: 'You are a helpful assistant' },
        { role: 'user', content: 'Hello' },
      ],
    });
    expect(warmup.status).toBe(200);
    expect(await warmup.json()).toMatchObject({
      object: 'chat.completion',
      model: 'conduit',
      choices: [{ index: 0, message: { role: 'assistant', content: WARMUP_LINE }, finish_reason: 'stop' }],
    });
    const streamed = await askModel(key, chat('Hello', true));
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await new EventReader(streamed).rest();
    expect(events.at(-1)).toBe('[DONE]');
    expect(events.slice(0, 3)).toMatchObject([
      {
        object: 'chat.completion.chunk',
        choices: [{ delta: { role: 'assistant', content: '' }, finish_reason: null }],
      },
      { choices: [{ delta: { content: WARMUP_LINE }, finish_reason: null }] },
      { choices: [{ delta: {}, finish_reason: 'stop' }] },
    ]);
    expect(events[3]).toMatchObject({ choices: [], usage: { total_tokens: 0 } });
    const responses = await askModel(
      key,
      {
        model: 'conduit',
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }],
      },
      'responses',
    );
    expect(await responses.json()).toMatchObject({
      object: 'response',
      status: 'completed',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: WARMUP_LINE }] }],
      output_text: WARMUP_LINE,
    });
  });
});

describe('a turn through the Conduit app', () => {
  it('sends the newest user message to the app and streams its deltas back as chat.completion.chunk events', async () => {
    const call = await openCall();
    const answer = askModel(await keyOf(), chat('What is on my calendar?', true));
    const turn = await appFrame(call);
    expect(turn).toEqual({
      type: 'conduit.turn',
      turn_id: expect.stringMatching(/^turn_/),
      text: 'What is on my calendar?',
    });
    const response = await answer;
    expect(response.status).toBe(200);
    const events = new EventReader(response);
    expect((await events.next())?.data).toMatchObject({
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
    });
    sendFromApp(call, { type: 'conduit.turn.delta', turn_id: turn.turn_id, text: 'Two meetings, ' });
    expect((await events.next())?.data).toMatchObject({ choices: [{ delta: { content: 'Two meetings, ' } }] });
    sendFromApp(call, { type: 'conduit.turn.delta', turn_id: turn.turn_id, text: 'both after lunch.' });
    expect((await events.next())?.data).toMatchObject({ choices: [{ delta: { content: 'both after lunch.' } }] });
    sendFromApp(call, { type: 'conduit.turn.done', turn_id: turn.turn_id });
    const rest = await events.rest();
    expect(rest[0]).toMatchObject({ choices: [{ delta: {}, finish_reason: 'stop' }] });
    expect(rest.at(-1)).toBe('[DONE]');

    // None of the turn frames reached the speech server: the next frame it sees is the app's next event.
    sendFromApp(call, { type: 'conduit.turn.bogus', turn_id: 'x' });
    sendFromApp(call, { type: 'input_audio_buffer.commit' });
    expect(JSON.parse((await call.upstream.frames.next()).data.toString('utf8'))).toEqual({
      type: 'input_audio_buffer.commit',
    });
    expect(call.upstream.frames.seen.some((frame) => frame.data.toString('utf8').includes('conduit.turn'))).toBe(false);
    await hangUp(call);
  });

  it('answers a whole chat completion and a Responses request once the app is done', async () => {
    const call = await openCall();
    const key = await keyOf();
    const answer = askModel(key, chat('Say hi'));
    const turn = await appFrame(call);
    sendFromApp(call, { type: 'conduit.turn.delta', turn_id: turn.turn_id, text: 'Hi ' });
    sendFromApp(call, { type: 'conduit.turn.delta', turn_id: turn.turn_id, text: 'there.' });
    sendFromApp(call, { type: 'conduit.turn.done', turn_id: turn.turn_id });
    expect(await (await answer).json()).toMatchObject({
      object: 'chat.completion',
      choices: [{ message: { role: 'assistant', content: 'Hi there.' }, finish_reason: 'stop' }],
    });

    const streamed = askModel(key, { model: 'm', stream: true, input: 'And now?' }, 'responses');
    const second = await appFrame(call);
    expect(second).toMatchObject({ type: 'conduit.turn', text: 'And now?' });
    sendFromApp(call, { type: 'conduit.turn.delta', turn_id: second.turn_id, text: 'Now this.' });
    sendFromApp(call, { type: 'conduit.turn.done', turn_id: second.turn_id });
    const events = new EventReader(await streamed);
    const names: (string | null)[] = [];
    const deltas: unknown[] = [];
    for (let item = await events.next(); item; item = await events.next()) {
      names.push(item.event);
      if (item.event === 'response.output_text.delta') deltas.push((item.data as { delta: string }).delta);
      if (item.event === 'response.completed')
        expect(item.data).toMatchObject({
          response: { status: 'completed', output: [{ content: [{ type: 'output_text', text: 'Now this.' }] }] },
        });
    }
    expect(names).toEqual([
      'response.created',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(deltas).toEqual(['Now this.']);
    await hangUp(call);
  });

  it('sends a turn to the profile’s newest socket only', async () => {
    const older = await openCall();
    const newer = await openCall();
    const answer = askModel(await keyOf(), chat('Which one?'));
    const turn = await appFrame(newer);
    expect(turn).toMatchObject({ type: 'conduit.turn', text: 'Which one?' });
    // The older socket may answer nothing for it: its frames for the turn are dropped.
    sendFromApp(older, { type: 'conduit.turn.delta', turn_id: turn.turn_id, text: 'wrong socket' });
    sendFromApp(newer, { type: 'conduit.turn.delta', turn_id: turn.turn_id, text: 'The newest.' });
    sendFromApp(newer, { type: 'conduit.turn.done', turn_id: turn.turn_id });
    expect(await (await answer).json()).toMatchObject({ choices: [{ message: { content: 'The newest.' } }] });
    expect(older.app.frames.seen.length).toBe(1);
    await hangUp(newer);
    await hangUp(older);
  });

  it('cancels a turn in the app when a newer turn starts, ending the older answer', async () => {
    const call = await openCall();
    const key = await keyOf();
    const first = askModel(key, chat('First question', true));
    const turn1 = await appFrame(call);
    sendFromApp(call, { type: 'conduit.turn.delta', turn_id: turn1.turn_id, text: 'Partly ' });
    const firstEvents = new EventReader(await first);
    await firstEvents.next();
    expect((await firstEvents.next())?.data).toMatchObject({ choices: [{ delta: { content: 'Partly ' } }] });
    const second = askModel(key, chat('Second question'));
    expect(await appFrame(call)).toEqual({ type: 'conduit.turn.cancel', turn_id: turn1.turn_id });
    const turn2 = await appFrame(call);
    expect(turn2).toMatchObject({ type: 'conduit.turn', text: 'Second question' });
    expect((await firstEvents.rest()).at(-1)).toBe('[DONE]');
    // A late delta of the cancelled turn goes nowhere.
    sendFromApp(call, { type: 'conduit.turn.delta', turn_id: turn1.turn_id, text: 'late' });
    sendFromApp(call, { type: 'conduit.turn.delta', turn_id: turn2.turn_id, text: 'Second answer.' });
    sendFromApp(call, { type: 'conduit.turn.done', turn_id: turn2.turn_id });
    expect(await (await second).json()).toMatchObject({ choices: [{ message: { content: 'Second answer.' } }] });
    await hangUp(call);
  });

  it('cancels the turn in the app when the speech server stops listening (the request is aborted)', async () => {
    const call = await openCall();
    const abort = new AbortController();
    const answer = askModel(await keyOf(), chat('A long story, please', true), 'chat/completions', abort.signal);
    const turn = await appFrame(call);
    const response = await answer;
    const events = new EventReader(response);
    await events.next();
    abort.abort();
    expect(await appFrame(call)).toEqual({ type: 'conduit.turn.cancel', turn_id: turn.turn_id });
    await hangUp(call);
  });

  it('ends a turn with no frame from the app for 90 s, telling the app, and an error ends it too', async () => {
    const call = await openCall();
    const key = await keyOf();
    const answer = askModel(key, chat('Are you there?'));
    const turn = await appFrame(call);
    sendFromApp(call, { type: 'conduit.turn.delta', turn_id: turn.turn_id, text: 'Let me check' });
    // Frames are read in order: once the audio after the delta reaches the server, the delta has
    // re-armed the 90 s wait. Audio (not a turn frame) keeps the socket's own 60 s idle bound away.
    sendFromApp(call, { type: 'input_audio_buffer.append', audio: 'AAAA' });
    await call.upstream.frames.next();
    timers.advance(50_000);
    sendFromApp(call, { type: 'input_audio_buffer.append', audio: 'BBBB' });
    await call.upstream.frames.next();
    timers.advance(39_999);
    expect(call.app.frames.seen.length).toBe(2);
    timers.advance(1);
    expect(await appFrame(call)).toEqual({ type: 'conduit.turn.cancel', turn_id: turn.turn_id });
    expect(await (await answer).json()).toMatchObject({ choices: [{ message: { content: 'Let me check' } }] });

    const failing = askModel(key, chat('Try again'));
    const turn2 = await appFrame(call);
    sendFromApp(call, { type: 'conduit.turn.error', turn_id: turn2.turn_id, message: 'Hermes is busy' });
    expect(await (await failing).json()).toMatchObject({ choices: [{ message: { content: '' } }] });
    await hangUp(call);
  });

  it('ends the answer when the app hangs up mid-turn, and later turns get the warmup line', async () => {
    const call = await openCall();
    const key = await keyOf();
    const answer = askModel(key, chat('Hello?', true));
    await appFrame(call);
    const events = new EventReader(await answer);
    await events.next();
    await hangUp(call);
    expect((await events.rest()).at(-1)).toBe('[DONE]');
    const after = await askModel(key, chat('Anyone?'));
    expect(await after.json()).toMatchObject({ choices: [{ message: { content: WARMUP_LINE } }] });
  });
});

describe('speak mode (Classic voice’s reply voice)', () => {
  it('reads back unchanged the sentence the app sent on its speak socket, and gives that socket no turns', async () => {
    const speaker = await openCall('profile=work&mode=speak');
    const sentence = 'Your train leaves at 9:40 from platform 2.';
    sendFromApp(speaker, {
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: sentence }] },
    });
    sendFromApp(speaker, { type: 'response.create' });
    // Relayed unchanged to the speech server, which then asks its model for the words.
    expect(JSON.parse((await speaker.upstream.frames.next()).data.toString('utf8'))).toMatchObject({
      type: 'conversation.item.create',
    });
    await speaker.upstream.frames.next();
    const key = await keyOf('work');
    const spoken = await askModel(key, chat(sentence, true));
    const events = await new EventReader(spoken).rest();
    expect(events[1]).toMatchObject({ choices: [{ delta: { content: sentence } }] });
    // Read back once; a speak socket is not a live call, so anything else gets the warmup line.
    expect(await (await askModel(key, chat(sentence))).json()).toMatchObject({
      choices: [{ message: { content: WARMUP_LINE } }],
    });
    expect(speaker.app.frames.seen.length).toBe(1);
    await hangUp(speaker);
  });
});

describe('Local Live where the host has no sign-in beside the key', () => {
  it('is unavailable in front of a dashboard without a login that this host exposes beyond loopback', async () => {
    const dashboard = http.createServer((req, res) => {
      const signedIn = req.headers['x-hermes-session-token'] === 'dashboard-session';
      res.writeHead(signedIn ? 200 : 401, { 'content-type': 'application/json' }).end('[]');
    });
    await new Promise<void>((resolve) => dashboard.listen(0, '127.0.0.1', resolve));
    const dashboardUrl = `http://127.0.0.1:${(dashboard.address() as AddressInfo).port}`;
    const exposed = await startHost(
      testConfig(home.root, {
        host: '0.0.0.0',
        allowOpenDashboard: true,
        fronting: { mode: 'dashboard', dashboardUrl },
        clock,
        timers,
        log,
      }),
    );
    try {
      const response = await fetch(`${exposed.url}${PREFIX}/local-live/status`, {
        headers: { 'x-hermes-session-token': 'dashboard-session' },
      });
      const body = (await response.json()) as Status;
      expect(body).toMatchObject({ ok: true, available: false, key: null });
      expect(body.reason).toContain('CONDUIT_HOST_ALLOW_OPEN_DASHBOARD');
      const refused = await fetch(`${exposed.url}${MODEL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await keyOf()}`, 'content-type': 'application/json' },
        body: JSON.stringify(chat('Hello')),
      });
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ error: { code: 'local_live_unavailable' } });
      const rotate = await fetch(`${exposed.url}${PREFIX}/local-live/key`, {
        method: 'POST',
        headers: { 'x-hermes-session-token': 'dashboard-session' },
      });
      expect(rotate.status).toBe(503);
    } finally {
      await exposed.app.close();
      dashboard.close();
    }
  });
});

describe('secrets', () => {
  it('never puts a Local Live key or a turn’s text in a log line or a close reason', () => {
    expect(keysSeen.length).toBeGreaterThan(3);
    expect(log.lines.some((line) => line.includes('Local Live turn ended'))).toBe(true);
    for (const text of [...answered, ...log.lines]) {
      for (const key of keysSeen) {
        expect(text).not.toContain(key);
        expect(text).not.toContain(key.split('.')[2]);
      }
      expect(text).not.toContain('calendar');
      expect(text).not.toContain('Two meetings');
    }
  });
});
