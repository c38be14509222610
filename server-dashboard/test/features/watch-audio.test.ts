/**
 * Watch audio, host side, end to end: the real host service grants `audio: true` on a real relay
 * process, dials the relay's gateway side of the bridge, and carries a Watch stand-in's sealed audio and
 * events (its own node:crypto sealing) to an xAI realtime stand-in over WebSocket and to an
 * OpenAI-Realtime stand-in over a real WebRTC call (werift on both ends). Only xAI and OpenAI are
 * stand-ins.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { watchAudioFeature } from '../../src/features/watch-audio/index.js';
import { watchToolsFeature } from '../../src/features/watch/index.js';
import { webSearchFeature } from '../../src/features/web-search/index.js';
import { TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';
import { ProviderStandIn } from '../support/provider-stand-ins.js';
import { RealRelay } from '../support/real-relay.js';
import {
  RealtimeStandIn,
  XAI_FIRST_EVENT,
  xaiHandshake,
  type RealtimeConnection,
} from '../support/realtime-stand-ins.js';
import {
  OpenAiRealtimeStandIn,
  peakOf,
  tone,
  WatchAudioStandIn,
  type AudioGrantAnswer,
} from '../support/watch-audio-stand-ins.js';

const PREFIX = '/api/plugins/conduit_push';
const XAI_KEY = 'xai-watch-audio-test-key-0123456789';
const CODEX_TOKEN = 'codex-watch-audio-access-token';
const CODEX_ACCOUNT = 'acct-watch-audio';

const home = tempHermesHome();
const xai = new RealtimeStandIn(xaiHandshake(XAI_KEY), XAI_FIRST_EVENT);
const openai = new OpenAiRealtimeStandIn(CODEX_TOKEN);
/** A relay from before Watch audio: it opens grants but answers no `audio`. */
const toolsOnlyRelay = new ProviderStandIn((call) =>
  call.method === 'POST'
    ? { status: 201, body: { grant_id: 'T'.repeat(22), expires_at: '2030-01-01T00:00:00Z' } }
    : { status: 204, body: '' },
);
let relay: RealRelay;
let host: Host & { url: string };

async function hostCall(
  method: 'GET' | 'POST',
  route: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(host.url + PREFIX + route, {
    method,
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function audioGrant(profile: string): Promise<AudioGrantAnswer> {
  const answer = await hostCall('POST', `/watch-tools/grant?profile=${profile}`, {
    tools: ['web_search'],
    audio: true,
  });
  if (answer.status !== 200) throw new Error(`grant ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as unknown as AudioGrantAnswer;
}

/** A Watch connected, hello said, and a call started on `engine`; resolves with the `started` control. */
async function startCall(grant: AudioGrantAnswer, engine: 'grok' | 'gpt_live', extra: Record<string, unknown> = {}) {
  const watch = new WatchAudioStandIn(grant);
  expect(await watch.opened).toBeNull();
  watch.hello();
  watch.control({ type: 'start', engine, ...extra });
  return { watch, started: await watch.controls.next() };
}

function profileDir(name: string, files: Record<string, string>): string {
  const dir = path.join(home.root, 'profiles', name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
  return dir;
}

const CALLING = {
  '.env': `XAI_API_KEY=${XAI_KEY}\n`,
  'auth.json': JSON.stringify({
    providers: { 'openai-codex': { tokens: { access_token: CODEX_TOKEN, account_id: CODEX_ACCOUNT } } },
  }),
  'config.yaml': 'voice:\n  grok_live:\n    model: grok-voice-watch\n    voice: ara\n',
};

beforeAll(async () => {
  await Promise.all([xai.start(), openai.start(), toolsOnlyRelay.start()]);
  relay = await RealRelay.start(home.root);
  for (const name of ['grok', 'gpt', 'gone', 'wrongkey', 'revoked', 'version', 'xaigone']) {
    await relay.pair(profileDir(name, CALLING));
  }
  writeFileSync(path.join(home.root, 'profiles', 'wrongkey', '.env'), 'XAI_API_KEY=xai-not-a-key-known-to-xai\n');
  writePairing(profileDir('toolsonly', CALLING), toolsOnlyRelay.url);
  await relay.pair(profileDir('nosignin', { '.env': `XAI_API_KEY=${XAI_KEY}\n` }));
  host = await startHost(testConfig(home.root, { upstreams: { xai: xai.url, chatgpt: openai.url } }), {
    features: [webSearchFeature, watchToolsFeature, watchAudioFeature],
  });
}, 120_000);

afterAll(async () => {
  await host?.app.close();
  await relay?.stop();
  await Promise.all([xai.stop(), openai.stop(), toolsOnlyRelay.stop()]);
  await rm(home.root, { recursive: true, force: true });
});

describe('GET /watch-audio/status and POST /watch-audio/prepare', () => {
  it('answers both engines ready: werift in this process for GPT-Live, Hermes’ xAI sign-in for Grok', async () => {
    const status = await hostCall('GET', '/watch-audio/status');
    expect(status).toEqual({
      status: 200,
      body: {
        ok: true,
        version: 1,
        engines: {
          gpt_live: { runtime: 'ready', source: 'plugin', reason: null },
          grok: { runtime: 'ready', source: 'hermes', reason: null },
        },
      },
    });
  });

  it('prepares five times in 300 s host-wide, then 429 with the reference’s message', async () => {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect(await hostCall('POST', '/watch-audio/prepare')).toEqual({
        status: 200,
        body: { ok: true, version: 1, engines: { gpt_live: { runtime: 'ready', source: 'plugin', reason: null } } },
      });
    }
    expect(await hostCall('POST', '/watch-audio/prepare')).toEqual({
      status: 429,
      body: { detail: 'Preparing GPT-Live for the Watch was asked too often; try again in a few minutes' },
    });
  });
});

describe('a grant opened with audio: true', () => {
  it('answers the Watch’s bridge URL on the relay, version 1 and both engines', async () => {
    const grant = await audioGrant('grok');
    const relayWs = relay.url.replace(/^http/, 'ws');
    expect(grant.audio).toEqual({
      url: `${relayWs}/v1/watch-audio/${grant.grant_id}/watch`,
      version: 1,
      engines: ['gpt_live', 'grok'],
    });
  });

  it('is refused 501 by a relay from before Watch audio, and that grant is closed again', async () => {
    expect(
      await hostCall('POST', '/watch-tools/grant?profile=toolsonly', { tools: ['web_search'], audio: true }),
    ).toEqual({
      status: 501,
      body: { detail: "The push relay doesn't support Watch audio yet" },
    });
    expect(toolsOnlyRelay.calls.map((call) => [call.method, call.url])).toEqual([
      ['POST', '/v1/watch-tools/grants'],
      ['DELETE', `/v1/watch-tools/grants/${'T'.repeat(22)}`],
    ]);
    expect(toolsOnlyRelay.calls[0]?.body).toMatchObject({ audio: true });
  });

  it('refuses audio that is not true or false', async () => {
    expect(await hostCall('POST', '/watch-tools/grant?profile=grok', { tools: ['web_search'], audio: 'yes' })).toEqual({
      status: 400,
      body: { detail: 'audio must be true or false' },
    });
  });
});

describe('Grok over the relay', () => {
  it('carries sealed audio and xAI’s own events both ways, paced down, and ends on the Watch’s end', async () => {
    const grant = await audioGrant('grok');
    const { watch, started } = await startCall(grant, 'grok', { voice: 'Eve', briefing: 'You are brief.' });
    expect(started).toEqual({
      type: 'started',
      engine: 'grok',
      model: 'grok-voice-watch',
      voice: 'eve',
      input_rate: 16000,
      output_rate: 24000,
      briefing_applied: true,
      greeting_applied: false,
    });
    const upstream: RealtimeConnection = await xai.connections.next();
    expect(upstream.handshake.headers.authorization).toBe(`Bearer ${XAI_KEY}`);
    expect(new URL(upstream.handshake.url, 'http://x').searchParams.get('model')).toBe('grok-voice-watch');
    const update = JSON.parse((await upstream.frames.next()).data.toString('utf8')) as Record<string, unknown>;
    expect(update).toMatchObject({
      type: 'session.update',
      session: {
        voice: 'eve',
        instructions: 'You are brief.',
        audio: { input: { format: { rate: 16000 } }, output: { format: { rate: 24000 } } },
      },
    });
    // xAI's first event reaches the Watch as an engine event.
    expect(await watch.events.next()).toEqual(XAI_FIRST_EVENT);

    // Up: the Watch's PCM becomes input_audio_buffer.append; its own events pass verbatim.
    const speech = tone(100);
    watch.pcm(speech);
    const append = JSON.parse((await upstream.frames.next()).data.toString('utf8')) as { type: string; audio: string };
    expect(append.type).toBe('input_audio_buffer.append');
    expect(Buffer.from(append.audio, 'base64').equals(speech)).toBe(true);
    watch.event({ type: 'response.create' });
    expect((await upstream.frames.next()).data.toString('utf8')).toBe('{"type":"response.create"}');

    // Down: a reply's audio delta goes as sealed PCM (in 40 ms chunks), never as an event.
    const reply = tone(200, 24_000, 300);
    upstream.socket.send(JSON.stringify({ type: 'response.output_audio.delta', delta: reply.toString('base64') }));
    upstream.socket.send(JSON.stringify({ type: 'response.done' }));
    const chunks: Buffer[] = [];
    while (Buffer.concat(chunks).length < reply.length) chunks.push(await watch.audio.next());
    expect(chunks).toHaveLength(5);
    expect(Buffer.concat(chunks).equals(reply)).toBe(true);
    expect(await watch.events.next()).toEqual({ type: 'response.done' });

    // Every message came down sealed with counters 0, 1, 2, … in order.
    expect(watch.messages.seen.map((message) => message.counter)).toEqual(
      watch.messages.seen.map((_message, index) => BigInt(index)),
    );

    watch.control({ type: 'end' });
    expect(await watch.controls.next()).toEqual({ type: 'ended', engine: 'grok', reason: 'ended' });
    expect((await upstream.closed).code).toBe(1000);
    watch.close();
  });

  it('drops the queued rest of a reply when xAI hears the user speak over it', async () => {
    const grant = await audioGrant('grok');
    const { watch, started } = await startCall(grant, 'grok');
    expect(started.type).toBe('started');
    const upstream = await xai.connections.next();
    expect(await watch.events.next()).toEqual(XAI_FIRST_EVENT);
    // Two seconds of reply arrive at once; the Watch gets the lead (240 ms) at once, the rest in real time.
    upstream.socket.send(
      JSON.stringify({ type: 'response.output_audio.delta', delta: Buffer.alloc(96_000).toString('base64') }),
    );
    upstream.socket.send(JSON.stringify({ type: 'input_audio_buffer.speech_started' }));
    expect(await watch.events.next()).toEqual({ type: 'input_audio_buffer.speech_started' });
    // The next reply is not queued behind the dropped one: it comes down at once.
    const marker = Buffer.alloc(1920, 7);
    upstream.socket.send(JSON.stringify({ type: 'response.output_audio.delta', delta: marker.toString('base64') }));
    const before: Buffer[] = [];
    for (let chunk = await watch.audio.next(); !chunk.equals(marker); chunk = await watch.audio.next()) {
      before.push(chunk);
    }
    expect(before.length).toBeGreaterThanOrEqual(6);
    expect(before.length).toBeLessThan(20);
    watch.close();
  });

  it('starts afresh for a newer Watch connection: the older is closed 4000 replaced and its call ends', async () => {
    const grant = await audioGrant('gone');
    const { watch: older, started } = await startCall(grant, 'grok');
    expect(started.type).toBe('started');
    const olderUpstream = await xai.connections.next();
    const newer = new WatchAudioStandIn(grant);
    expect(await newer.opened).toBeNull();
    expect(await older.closed).toEqual({ code: 4000, reason: 'replaced' });
    expect((await olderUpstream.closed).code).toBe(1000);
    newer.hello();
    newer.control({ type: 'start', engine: 'grok' });
    expect((await newer.controls.next()).type).toBe('started');
    await xai.connections.next();
    newer.close();
  });

  it('ends xAI’s socket when the Watch goes away', async () => {
    const grant = await audioGrant('gone');
    const { watch, started } = await startCall(grant, 'grok');
    expect(started.type).toBe('started');
    const upstream = await xai.connections.next();
    watch.close();
    expect((await upstream.closed).code).toBe(1000);
  });

  it('tells the Watch ended/lost when xAI drops the call', async () => {
    const grant = await audioGrant('xaigone');
    const { watch, started } = await startCall(grant, 'grok');
    expect(started.type).toBe('started');
    const upstream = await xai.connections.next();
    upstream.socket.close(1011, 'internal');
    let control = await watch.controls.next();
    expect(control).toEqual({ type: 'ended', engine: 'grok', reason: 'lost' });
    // A new call can start on the same connection afterwards.
    watch.control({ type: 'start', engine: 'grok' });
    control = await watch.controls.next();
    expect(control.type).toBe('started');
    await xai.connections.next();
    watch.close();
  });

  it('answers xAI’s refusal of the key as a sealed error, refused', async () => {
    const grant = await audioGrant('wrongkey');
    const { watch, started } = await startCall(grant, 'grok');
    expect(started).toEqual({ type: 'error', code: 'refused', message: 'xAI refused the XAI_API_KEY (HTTP 401)' });
    watch.close();
  });

  it('answers a second start while a call runs with busy, and a hello of another version with version', async () => {
    const grant = await audioGrant('version');
    const { watch, started } = await startCall(grant, 'grok');
    expect(started.type).toBe('started');
    await xai.connections.next();
    watch.control({ type: 'start', engine: 'grok' });
    expect(await watch.controls.next()).toEqual({
      type: 'error',
      code: 'busy',
      message: 'A call is already running on this Watch connection',
    });
    watch.close();

    const newer = new WatchAudioStandIn(grant);
    expect(await newer.opened).toBeNull();
    newer.hello(2);
    expect(await newer.controls.next()).toEqual({
      type: 'error',
      code: 'version',
      message: 'This Hermes host speaks Watch audio version 1',
    });
    newer.close();
  });

  it('drops a forged or replayed message without a word', async () => {
    const grant = await audioGrant('grok');
    const { watch, started } = await startCall(grant, 'grok');
    expect(started.type).toBe('started');
    const upstream = await xai.connections.next();
    await upstream.frames.next(); // session.update
    const replayed = watch.seal(2, Buffer.from('{"type":"replayed"}'), 0n);
    watch.sendRaw(replayed);
    const forged = watch.seal(2, Buffer.from('{"type":"forged"}'));
    forged[forged.length - 1] = (forged[forged.length - 1] ?? 0) ^ 1;
    watch.sendRaw(forged);
    watch.event({ type: 'genuine' });
    expect((await upstream.frames.next()).data.toString('utf8')).toBe('{"type":"genuine"}');
    watch.close();
  });

  it('closes the bridge on revoke: the Watch hears 4010 grant_closed and xAI’s socket ends', async () => {
    const grant = await audioGrant('revoked');
    const { watch, started } = await startCall(grant, 'grok');
    expect(started.type).toBe('started');
    const upstream = await xai.connections.next();
    expect(await hostCall('POST', '/watch-tools/revoke?profile=revoked', { grant_id: grant.grant_id })).toEqual({
      status: 200,
      body: { ok: true, revoked: true },
    });
    expect(await watch.closed).toEqual({ code: 4010, reason: 'grant_closed' });
    expect((await upstream.closed).code).toBe(1000);
  });
});

describe('the relay going away', () => {
  it('ends the call on both sides: the Watch hears 1001 going_away and xAI’s socket is closed', async () => {
    const second = await RealRelay.start(path.join(home.root, 'second-relay'));
    try {
      await second.pair(profileDir('relaygone', CALLING));
      const grant = await audioGrant('relaygone');
      const { watch, started } = await startCall(grant, 'grok');
      expect(started.type).toBe('started');
      const upstream = await xai.connections.next();
      await second.stop();
      expect(await watch.closed).toEqual({ code: 1001, reason: 'going_away' });
      expect((await upstream.closed).code).toBe(1000);
    } finally {
      await second.stop();
    }
  });
});

describe('GPT-Live over the relay, a real WebRTC call', () => {
  it('does the SDP exchange with the Codex sign-in, and carries Opus audio and oai-events both ways', async () => {
    const grant = await audioGrant('gpt');
    const { watch, started } = await startCall(grant, 'gpt_live', { voice: 'Cove', greeting: 'Hi there' });
    expect(started).toEqual({
      type: 'started',
      engine: 'gpt_live',
      model: 'gpt-live-1-codex',
      voice: 'cove',
      input_rate: 16000,
      output_rate: 24000,
      briefing_applied: false,
      greeting_applied: true,
    });
    const call = await openai.calls.next();
    expect(call.headers.authorization).toBe(`Bearer ${CODEX_TOKEN}`);
    expect(call.headers['chatgpt-account-id']).toBe(CODEX_ACCOUNT);
    expect(call.body.sdp.startsWith('v=0')).toBe(true);
    expect(call.body.sdp).toContain('opus/48000');
    expect(call.body.session).toMatchObject({ model: 'gpt-live-1-codex', audio: { output: { voice: 'cove' } } });
    await call.channel;
    expect(await watch.events.next()).toEqual({ type: 'session.created', session: { id: 'sess_standin' } });

    // The Watch's event reaches the call's events channel, and the call's answer comes back.
    watch.event({ type: 'response.create' });
    expect(await call.events.next()).toEqual({ type: 'response.create' });
    expect(await watch.events.next()).toEqual({ type: 'echo', of: 'response.create' });

    // 16 kHz PCM up becomes Opus on the audio track; the stand-in echoes it; 24 kHz PCM comes down.
    watch.pcm(tone(400));
    const payload = await call.audio.next();
    expect(payload.length).toBeGreaterThan(0);
    let loudest = 0;
    while (loudest < 1000) {
      const pcm = await watch.audio.next();
      expect(pcm.length).toBe(960); // 20 ms at 24 kHz
      loudest = Math.max(loudest, peakOf(pcm));
    }

    watch.control({ type: 'end' });
    expect(await watch.controls.next()).toEqual({ type: 'ended', engine: 'gpt_live', reason: 'ended' });
    watch.close();
  }, 60_000);

  it('answers a Watch on a profile without a Codex sign-in unavailable, and a refused exchange refused', async () => {
    const unsigned = await startCall(await audioGrant('nosignin'), 'gpt_live');
    expect(unsigned.started).toMatchObject({ type: 'error', code: 'unavailable' });
    expect(String(unsigned.started.message)).toContain('GPT-Live needs a working Codex sign-in');
    unsigned.watch.close();

    openai.status = 403;
    try {
      const refused = await startCall(await audioGrant('gpt'), 'gpt_live');
      expect(refused.started).toEqual({
        type: 'error',
        code: 'refused',
        message:
          "GPT-Live session was rejected (HTTP 403); check the Codex sign-in and the account's voice access. No API fallback was used.",
      });
      refused.watch.close();
    } finally {
      openai.status = 201;
    }
  });
});
