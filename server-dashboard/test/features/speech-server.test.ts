import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { speechServerAddress } from '../../src/features/speech-server/speech-server-url.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { memoryLogger } from '../../src/log.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import {
  openClient,
  OPENAI_REALTIME_FIRST_EVENT,
  RealtimeStandIn,
  sameFrames,
  sendTextAndBinary,
  type HandshakeAnswer,
  type TestClient,
  openTicketedClient,
} from '../support/realtime-stand-ins.js';

const SERVER_KEY = 'speech-proxy-key-0123456789abcdef';
const PREFIX = '/api/plugins/conduit_push';

const home = tempHermesHome();
const accept = (): HandshakeAnswer => ({ accept: true });
/** speech-to-speech serve: an OpenAI-Realtime WebSocket server (no auth of its own; here behind a key check). */
const speech = new RealtimeStandIn(accept, OPENAI_REALTIME_FIRST_EVENT);
const clock = new ManualClock(Date.UTC(2026, 11, 2, 11, 0, 0));
const timers = new ManualTimers();
const log = memoryLogger();
const answered: string[] = [];
let host: Host & { url: string };

function setSpeechServer(profile: string, url: string, apiKey = ''): void {
  const dir = profile === 'default' ? home.root : path.join(home.root, 'profiles', profile);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'config.yaml'),
    `voice:\n  speech_server:\n    url: ${JSON.stringify(url)}\n    api_key: ${JSON.stringify(apiKey)}\n`,
  );
}

async function connect(query = ''): Promise<TestClient> {
  const client = await openTicketedClient(host.url, `${PREFIX}/local-live/socket`, query, TEST_TOKEN);
  void client.closed.then(({ reason }) => answered.push(reason));
  return client;
}

beforeAll(async () => {
  await speech.start();
  // The default profile points at the stand-in as a bare host (the relay adds /v1/realtime), with a key.
  setSpeechServer('default', speech.url.replace(/^ws/, 'http'), SERVER_KEY);
  setSpeechServer('work', `${speech.url}/v1/realtime`);
  setSpeechServer('public', 'ws://speech.example.com:8765/v1/realtime');
  setSpeechServer('creds', `ws://user:secret@127.0.0.1:1/v1/realtime`);
  mkdirSync(path.join(home.root, 'profiles', 'unset'));
  host = await startHost(testConfig(home.root, { clock, timers, log }));
});
afterAll(async () => {
  await host.app.close();
  await speech.stop();
  home.cleanup();
});
beforeEach(() => {
  clock.advance(60_000);
  speech.answer = accept;
});

describe('WEBSOCKET /local-live/socket (the speech server relay)', () => {
  it('relays text and binary frames both ways byte for byte, adding only the bearer key', async () => {
    const client = await connect();
    const upstream = await speech.connections.next();
    expect(upstream.handshake.url).toBe('/v1/realtime');
    expect(upstream.handshake.headers.authorization).toBe(`Bearer ${SERVER_KEY}`);
    expect(await client.frames.next()).toEqual({
      data: Buffer.from(JSON.stringify(OPENAI_REALTIME_FIRST_EVENT)),
      isBinary: false,
    });
    const event = '{"type":"input_audio_buffer.append","audio":"UklGRg=="}';
    const pcm = Buffer.from([255, 0, 128, 127, 1, 2]);
    expect(await sendTextAndBinary(client.socket, upstream.frames, event, pcm)).toEqual(sameFrames(event, pcm));
    const transcript = '{"type":"conversation.item.input_audio_transcription.completed","transcript":"hi"}';
    expect(await sendTextAndBinary(upstream.socket, client.frames, transcript, pcm)).toEqual(
      sameFrames(transcript, pcm),
    );
    client.socket.close();
    await upstream.closed;
  });

  it('sends no Authorization without a key, and relays the speak mode the same way', async () => {
    const client = await connect('profile=work&mode=speak');
    const upstream = await speech.connections.next();
    expect(upstream.handshake.headers.authorization).toBeUndefined();
    client.socket.close();
    await client.closed;
  });

  it('closes 1009 "Frame too large" on a frame over 256 KiB', async () => {
    const client = await connect();
    await speech.connections.next();
    client.socket.send(Buffer.alloc(256 * 1024 + 1));
    expect(await client.closed).toEqual({ code: 1009, reason: 'Frame too large' });
  });

  it('closes an idle socket after 60 s without a frame from the app; each frame restarts the wait', async () => {
    const client = await connect();
    const upstream = await speech.connections.next();
    await client.frames.next();
    timers.advance(59_000);
    client.socket.send('{"type":"input_audio_buffer.commit"}');
    await upstream.frames.next();
    timers.advance(59_000);
    expect(client.socket.readyState).toBe(client.socket.OPEN);
    timers.advance(1_000);
    expect(await client.closed).toEqual({ code: 1000, reason: 'Nothing was sent for 60 seconds' });
    expect((await upstream.closed).code).toBe(1000);
  });

  it('closes 4503 when no speech server is set, or its URL is not usable', async () => {
    expect(await (await connect('profile=unset')).closed).toEqual({
      code: 4503,
      reason: 'No speech server is set (voice.speech_server.url)',
    });
    expect(await (await connect('profile=public')).closed).toEqual({
      code: 4503,
      reason: 'A speech server on a public host needs wss://',
    });
    expect((await (await connect('profile=creds')).closed).code).toBe(4503);
  });

  it('closes 4401 without the dashboard credential and 4400 for a profile that cannot be resolved', async () => {
    const bare = openClient(`${host.url.replace(/^http/, 'ws')}${PREFIX}/local-live/socket`);
    expect(await bare.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });
    expect((await (await connect('profile=ghost')).closed).code).toBe(4400);
    expect((await (await connect('mode=shout')).closed).code).toBe(4400);
  });

  it("maps the server's refusals: 4xx to 4400, 429 to 4429, 5xx to 4502", async () => {
    speech.answer = (): HandshakeAnswer => ({ status: 403, body: { detail: 'forbidden' } });
    expect(await (await connect()).closed).toEqual({
      code: 4400,
      reason: 'The speech server refused the call (HTTP 403)',
    });
    speech.answer = (): HandshakeAnswer => ({ status: 429, body: { detail: 'busy' } });
    expect((await (await connect()).closed).code).toBe(4429);
    speech.answer = (): HandshakeAnswer => ({ status: 503, body: { detail: 'loading' } });
    expect((await (await connect()).closed).code).toBe(4502);
  });

  it('closes 4400 when the server closes 3000–4999, 4502 when it drops or cannot be reached', async () => {
    const refused = await connect();
    (await speech.connections.next()).socket.close(4000, 'No pipeline free');
    expect(await refused.closed).toEqual({
      code: 4400,
      reason: 'The speech server closed the call (4000): No pipeline free',
    });
    const dropped = await connect();
    (await speech.connections.next()).socket.terminate();
    expect(await dropped.closed).toEqual({ code: 4502, reason: 'The connection to the speech server was lost' });

    setSpeechServer('work', 'ws://127.0.0.1:1/v1/realtime');
    const unreachable = await connect('profile=work');
    expect(await unreachable.closed).toEqual({ code: 4502, reason: 'Could not reach the speech server' });
    setSpeechServer('work', `${speech.url}/v1/realtime`);
  });

  it('closes 4500 naming the failure by its type when the relay fails on the host, and frees the slot', async () => {
    // A key with a line break cannot be a header: dialling throws on the host, never sends it.
    setSpeechServer('work', `${speech.url}/v1/realtime`, 'bad\nkey');
    for (let i = 0; i < 3; i++) {
      expect(await (await connect('profile=work')).closed).toEqual({
        code: 4500,
        reason: 'Speech server socket failed on the host (TypeError)',
      });
    }
    setSpeechServer('work', `${speech.url}/v1/realtime`);
  });

  it('limits open calls to 2 per profile (4429)', async () => {
    const open = [await connect(), await connect()];
    await speech.connections.next();
    await speech.connections.next();
    expect(await (await connect()).closed).toEqual({
      code: 4429,
      reason: 'Too many speech server calls are open on this host',
    });
    for (const client of open) {
      client.socket.close();
      await client.closed;
    }
  });

  it('never puts the server key in a log line or a close reason', () => {
    expect(log.lines.some((line) => line.includes('Speech server call opened'))).toBe(true);
    for (const text of [...answered, ...log.lines]) {
      expect(text).not.toContain(SERVER_KEY);
      expect(text).not.toContain('secret');
      expect(text).not.toContain('127.0.0.1:1');
    }
  });
});

describe('the speech server URL rules', () => {
  const cases: [string, string | null][] = [
    ['ws://192.168.1.20:8765/v1/realtime', 'ws://192.168.1.20:8765/v1/realtime'],
    ['http://192.168.1.20:8765', 'ws://192.168.1.20:8765/v1/realtime'],
    ['https://speech.example.com', 'wss://speech.example.com/v1/realtime'],
    ['gpu-box:8765', 'ws://gpu-box:8765/v1/realtime'],
    ['ws://mac.local:8765/rt', 'ws://mac.local:8765/rt'],
    ['ws://box.tail1234.ts.net/v1/realtime', 'ws://box.tail1234.ts.net/v1/realtime'],
    ['ws://speech.home.arpa/', 'ws://speech.home.arpa/v1/realtime'],
    ['ws://nas.lan', 'ws://nas.lan/v1/realtime'],
    ['ws://gpu.internal', 'ws://gpu.internal/v1/realtime'],
    ['ws://10.1.2.3', 'ws://10.1.2.3/v1/realtime'],
    ['ws://172.20.0.5', 'ws://172.20.0.5/v1/realtime'],
    ['ws://169.254.10.1', 'ws://169.254.10.1/v1/realtime'],
    ['ws://100.101.102.103', 'ws://100.101.102.103/v1/realtime'],
    ['ws://[fd7a:115c:a1e0::1]:8765', 'ws://[fd7a:115c:a1e0::1]:8765/v1/realtime'],
    ['ws://[fe80::1]', 'ws://[fe80::1]/v1/realtime'],
    ['ws://localhost:8765', 'ws://localhost:8765/v1/realtime'],
    ['ws://speech.example.com', null],
    ['ws://8.8.8.8', null],
    ['ws://172.32.0.1', null],
    ['ws://100.128.0.1', null],
    ['ftp://192.168.1.2', null],
    ['ws://u:p@192.168.1.2', null],
    ['ws://[::', null],
  ];
  it.each(cases)('%s → %s', (configured, expected) => {
    const address = speechServerAddress(configured);
    expect(address.ok ? address.url : null).toBe(expected);
  });
});
