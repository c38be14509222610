import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeWav } from '../../src/audio/wav.js';
import { ECHO_PREFIX } from '../../src/agent/echo-agent.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';
import { spokenSentence } from '../../src/testing/spoken-fixture.js';
import { startGatewayProcess, type GatewayProcess } from '../../src/testing/gateway-process.js';

// Debian's chromium, as ARCHITECTURE.md prescribes; CI installs it. A missing browser fails the test.
const CHROMIUM = '/usr/bin/chromium';
const KEY = 'browser-test-key';

let upstream: FakeUpstreams;
let gateway: GatewayProcess;
let browser: Browser;
let page: Page;

interface DemoState {
  state: string;
  events: { type: string; [key: string]: unknown }[];
  transcripts: string[];
  captions: Record<string, string>;
  audio: { peak: number; audibleMs: number };
}

const demo = () => page.evaluate(() => (globalThis as unknown as { demo: DemoState }).demo);

beforeAll(async () => {
  // The microphone: a sentence spoken by espeak-ng, offline, that Chromium's fake capture device loops (one
  // sentence every ~7.5 s), so whenever the call connects the next repetition is a whole utterance.
  const folder = mkdtempSync(path.join(os.tmpdir(), 'voice-demo-'));
  const wav = path.join(folder, 'question.wav');
  writeFileSync(wav, encodeWav(await spokenSentence('Hello gateway, what time is it?', 0.5, 5), 48_000));
  upstream = await startFakeUpstreams({ transcript: () => 'Hello gateway, what time is it?' });
  // Default agent (echo) and default speech (offline espeak-ng): the path a new user gets.
  gateway = await startGatewayProcess({
    HERMES_REALTIME_API_KEY: KEY,
    HERMES_REALTIME_VAD_BACKEND: 'rms',
    HERMES_REALTIME_SILENCE_DURATION: '0.8',
    HERMES_REALTIME_STT_BASE_URL: upstream.openAiBaseUrl,
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`,
      '--autoplay-policy=no-user-gesture-required',
    ],
  });
  page = await browser.newPage();
});

afterAll(async () => {
  if (process.env.VOICE_DEBUG_BROWSER) {
    console.log(JSON.stringify(await demo(), null, 1).slice(0, 6000));
    console.log(gateway.output().slice(-4000));
  }
  await browser?.close();
  await gateway?.stop();
  await upstream?.close();
});

describe('the /demo page in headless Chromium', () => {
  it('calls with the browser WebRTC stack, speaks a turn from the microphone and plays the reply', async () => {
    await page.goto(`${gateway.url}/demo#key=${KEY}`);
    await page.click('#call');
    await page.waitForFunction(() => (globalThis as unknown as { demo: DemoState }).demo.state === 'connected', null, {
      timeout: 30_000,
    });
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { demo: DemoState }).demo.events.some(
          (e) => e.type === 'output_audio_buffer.stopped',
        ),
      null,
      { timeout: 60_000 },
    );
    const state = await demo();
    expect(state.transcripts[0]).toBe('Hello gateway, what time is it?');
    const types = state.events.map((e) => e.type);
    for (const type of [
      'session.created',
      'input_audio_buffer.speech_started',
      'input_audio_buffer.speech_stopped',
      'response.created',
      'output_audio_buffer.started',
      'response.output_audio_transcript.done',
      'response.done',
    ])
      expect(types).toContain(type);
    expect(Object.values(state.captions)).toContain(`${ECHO_PREFIX} Hello gateway, what time is it?`);
    // The reply was heard: the page's analyser measured audible output from the remote track.
    expect(state.audio.audibleMs).toBeGreaterThan(500);
    expect(await page.textContent('#log')).toContain('You: Hello gateway, what time is it?');
  });

  it('mutes the microphone, sends typed input, shows the captioned reply and hangs up', async () => {
    // Muted first, so the looping microphone cannot start a spoken turn over the typed one.
    await page.click('#mute');
    await page.waitForFunction(() =>
      (globalThis as unknown as { demo: DemoState }).demo.events.some(
        (e) => e.type === 'hermes.input_audio.state_updated' && e.muted === true,
      ),
    );
    const before = (await demo()).events.length;
    await page.fill('#text', 'hello from the keyboard');
    await page.click('#send');
    await page.waitForFunction(
      (from) =>
        (globalThis as unknown as { demo: DemoState }).demo.events
          .slice(from)
          .some((e) => e.type === 'response.output_audio_transcript.done' && String(e.transcript).includes('keyboard')),
      before,
      { timeout: 30_000 },
    );
    // A spoken repetition caught by the mute may finish first; the typed reply is the one about the keyboard.
    const done = (await demo()).events
      .slice(before)
      .find((e) => e.type === 'response.output_audio_transcript.done' && String(e.transcript).includes('keyboard'));
    expect(done?.transcript).toBe(`${ECHO_PREFIX} hello from the keyboard`);
    expect(await page.textContent('#log')).toContain('You: hello from the keyboard');
    await page.click('#hangup');
    expect((await demo()).state).toBe('ended');
    expect(await page.textContent('#errors')).toBe('');
  });
});
