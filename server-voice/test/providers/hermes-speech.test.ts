import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { memoryLogger } from '../../src/log.js';
import { providersFromConfig } from '../../src/pipeline/providers-from-config.js';
import { parseDotenv } from '../../src/profile-dotenv.js';
import { FakeOpenAiSpeech } from './fake-openai-speech.js';

const PROFILE_KEY = 'sk-profile-secret-0123456789';

/** A Hermes profile home with this config.yaml and .env (either may be left out). */
function profileHome(files: { yaml?: string; dotenv?: string }): string {
  const home = path.join(mkdtempSync(path.join(os.tmpdir(), 'voice-hermes-speech-')), 'profiles', 'mira');
  mkdirSync(home, { recursive: true });
  if (files.yaml !== undefined) writeFileSync(path.join(home, 'config.yaml'), files.yaml);
  if (files.dotenv !== undefined) writeFileSync(path.join(home, '.env'), files.dotenv);
  return home;
}

const load = (files: { yaml?: string; dotenv?: string }, env: Record<string, string> = {}) =>
  loadConfig({ HERMES_REALTIME_API_KEY: 'k', HERMES_HOME: profileHome(files), ...env });

const OPENAI_PROFILE = {
  yaml: [
    'stt:',
    '  provider: openai',
    '  language: de',
    '  openai:',
    '    model: gpt-4o-mini-transcribe',
    'tts:',
    '  provider: openai',
    '  speed: 1.25',
    '  openai:',
    '    model: tts-1',
    '    voice: nova',
    '',
  ].join('\n'),
  dotenv: `# Hermes keys\nexport VOICE_TOOLS_OPENAI_KEY="${PROFILE_KEY}"\n`,
};

describe('speech settings: the gateway over the Hermes profile over the fallback', () => {
  it("uses the profile's Hermes STT and TTS (config.yaml model and voice, the key from its .env)", () => {
    const config = load(OPENAI_PROFILE);
    expect(config.speech).toEqual({
      stt: { source: 'hermes', provider: 'openai', model: 'gpt-4o-mini-transcribe' },
      tts: { source: 'hermes', provider: 'openai', model: 'tts-1', voice: 'nova' },
    });
    expect(config.speechEnv).toMatchObject({
      HERMES_REALTIME_STT_BASE_URL: 'https://api.openai.com/v1',
      HERMES_REALTIME_STT_MODEL: 'gpt-4o-mini-transcribe',
      HERMES_REALTIME_STT_API_KEY: PROFILE_KEY,
      HERMES_REALTIME_STT_LANGUAGE: 'de',
      HERMES_REALTIME_TTS_PROVIDER: 'openai',
      HERMES_REALTIME_TTS_VOICE: 'nova',
      HERMES_REALTIME_TTS_API_KEY: PROFILE_KEY,
      HERMES_REALTIME_TTS_SPEED: '1.25',
    });
  });

  it('lets HERMES_REALTIME_STT_* / _TTS_* override the profile, one capability or one value at a time', () => {
    const overridden = load(OPENAI_PROFILE, {
      HERMES_REALTIME_STT_BASE_URL: 'http://127.0.0.1:9000/v1',
      HERMES_REALTIME_STT_MODEL: 'whisper-large-v3',
      HERMES_REALTIME_TTS_PROVIDER: 'espeak',
    });
    expect(overridden.speech).toEqual({
      stt: { source: 'gateway', provider: 'openai-compatible', model: 'whisper-large-v3' },
      tts: { source: 'gateway', provider: 'espeak', voice: 'en-us' },
    });
    expect(overridden.speechEnv.HERMES_REALTIME_STT_API_KEY).toBeUndefined();
    expect(overridden.speechEnv.HERMES_REALTIME_TTS_API_KEY).toBeUndefined();

    const oneValue = load(OPENAI_PROFILE, { HERMES_REALTIME_TTS_VOICE: 'shimmer' });
    expect(oneValue.speech.tts).toEqual({ source: 'hermes', provider: 'openai', model: 'tts-1', voice: 'shimmer' });
  });

  it('falls back to the stand-in transcript and espeak-ng only when Hermes has nothing configured', () => {
    for (const files of [{}, { yaml: 'model:\n  default: m\n' }, { dotenv: 'OTHER=1\n' }]) {
      const config = load(files);
      expect(config.speech.stt).toMatchObject({ source: 'fallback', provider: 'stand-in' });
      expect(config.speech.stt.note).toMatch(/no speech-to-text configured/);
      expect(config.speech.tts).toMatchObject({ source: 'fallback', provider: 'espeak', voice: 'en-us' });
      expect(config.speech.tts.note).toMatch(/no tts\.provider.*Edge TTS/);
      expect(config.speechEnv).toEqual({});
    }
  });

  it("auto-detects transcription as Hermes does when stt.provider is unset (Groq's key, then OpenAI's)", () => {
    const groq = load({ dotenv: `GROQ_API_KEY=${PROFILE_KEY}\nOPENAI_API_KEY=sk-other\n` });
    expect(groq.speech.stt).toMatchObject({ source: 'hermes', provider: 'groq', model: 'whisper-large-v3-turbo' });
    expect(groq.speech.stt.note).toMatch(/auto-detection/);
    expect(groq.speechEnv.HERMES_REALTIME_STT_BASE_URL).toBe('https://api.groq.com/openai/v1');
    expect(groq.speechEnv.HERMES_REALTIME_STT_API_KEY).toBe(PROFILE_KEY);
    // Speech is never chosen from keys alone: Hermes' default stays Edge TTS, which runs only inside Hermes.
    expect(groq.speech.tts.source).toBe('fallback');

    const openai = load({}, { OPENAI_API_KEY: PROFILE_KEY });
    expect(openai.speech.stt).toMatchObject({ source: 'hermes', provider: 'openai', model: 'whisper-1' });
  });

  it("takes the profile's .env over the gateway's environment, and stt.enabled: false turns Hermes STT off", () => {
    const config = load(
      { yaml: 'stt:\n  provider: openai\n', dotenv: `OPENAI_API_KEY=${PROFILE_KEY}\n` },
      { OPENAI_API_KEY: 'sk-process-environment' },
    );
    expect(config.speechEnv.HERMES_REALTIME_STT_API_KEY).toBe(PROFILE_KEY);
    const off = load({ yaml: 'stt:\n  enabled: no\n  provider: openai\n', dotenv: `OPENAI_API_KEY=${PROFILE_KEY}\n` });
    expect(off.speech.stt).toEqual({
      source: 'fallback',
      provider: 'stand-in',
      note: 'stt.enabled is false in the Hermes profile',
    });
  });

  it('falls back with the reason shown when the Hermes provider cannot run here or has no key', () => {
    const local = load({ yaml: 'stt:\n  provider: local\ntts:\n  provider: edge\n' });
    expect(local.speech.stt).toMatchObject({ source: 'fallback', provider: 'stand-in' });
    expect(local.speech.stt.note).toBe(
      "Hermes' stt.provider local cannot be used here: faster-whisper runs inside Hermes, not in this gateway",
    );
    expect(local.speech.tts.note).toBe(
      "Hermes' tts.provider edge cannot be used here: Edge TTS runs inside Hermes (edge-tts), not in this gateway",
    );
    const eleven = load({ yaml: 'tts:\n  provider: elevenlabs\n', dotenv: `ELEVENLABS_API_KEY=${PROFILE_KEY}\n` });
    expect(eleven.speech.tts).toMatchObject({ source: 'fallback', provider: 'espeak' });
    expect(eleven.speech.tts.note).toMatch(/elevenlabs cannot be used here: ElevenLabs has no client/);
    const keyless = load({ yaml: 'stt:\n  provider: groq\ntts:\n  provider: openai\n' });
    expect(keyless.speech.stt.note).toBe("Hermes' stt.provider is groq but GROQ_API_KEY is not set");
    expect(keyless.speech.tts.note).toMatch(/tts\.provider is openai but none of tts\.openai\.api_key/);
    // A local OpenAI-compatible server needs no key, as in Hermes.
    const localServer = load({ yaml: 'tts:\n  provider: openai\n  openai:\n    base_url: http://127.0.0.1:8880/v1\n' });
    expect(localServer.speech.tts.source).toBe('hermes');
    expect(localServer.speechEnv.HERMES_REALTIME_TTS_API_KEY).toBeUndefined();
  });

  it('never puts a key from the profile in the reported selection', () => {
    for (const files of [OPENAI_PROFILE, { yaml: 'stt:\n  provider: groq\n', dotenv: `GROQ_API_KEY=${PROFILE_KEY}\n` }])
      expect(JSON.stringify(load(files).speech)).not.toContain(PROFILE_KEY);
  });

  it('reads .env lines as Hermes does', () => {
    expect(parseDotenv('# c\nexport A="x y"\nB=\'q\'\nC=plain  # note\nD=a#b\n  E = spaced \nnot a line\n')).toEqual({
      A: 'x y',
      B: 'q',
      C: 'plain',
      D: 'a#b',
      E: 'spaced',
    });
  });
});

describe("a gateway on the profile's Hermes speech configuration", () => {
  const fake = new FakeOpenAiSpeech();
  beforeAll(() => fake.start());
  afterAll(() => fake.stop());

  const profile = () =>
    profileHome({
      yaml: [
        'stt:',
        '  provider: openai',
        '  openai:',
        `    base_url: ${fake.baseUrl}`,
        '    model: gpt-4o-mini-transcribe',
        'tts:',
        '  provider: openai',
        '  openai:',
        `    base_url: ${fake.baseUrl}`,
        '    model: gpt-4o-mini-tts',
        '    voice: coral',
        '',
      ].join('\n'),
      dotenv: `VOICE_TOOLS_OPENAI_KEY=${PROFILE_KEY}\n`,
    });

  it('sends the model, voice and key from the profile to the OpenAI-compatible provider', async () => {
    fake.apiKey = PROFILE_KEY;
    const config = loadConfig({ HERMES_REALTIME_API_KEY: 'k', HERMES_HOME: profile() });
    const { stt, tts } = await providersFromConfig(config, {});
    expect(await stt.transcribe({ pcm: new Int16Array(4800), sampleRateHz: 48_000 })).toBe('hello world');
    expect(fake.transcriptions.at(-1)?.fields.model).toBe('gpt-4o-mini-transcribe');
    expect(fake.transcriptions.at(-1)?.authorization).toBe(`Bearer ${PROFILE_KEY}`);
    for await (const chunk of tts.synthesize('Hello there.')) expect(chunk.length).toBeGreaterThan(0);
    expect(fake.speeches.at(-1)?.body).toMatchObject({
      model: 'gpt-4o-mini-tts',
      voice: 'coral',
      input: 'Hello there.',
    });
    expect(fake.speeches.at(-1)?.authorization).toBe(`Bearer ${PROFILE_KEY}`);
  });

  it('names the source and provider in discovery and the start-up log, and never the key', async () => {
    const logger = memoryLogger();
    const app = await buildApp(
      loadConfig({ HERMES_REALTIME_API_KEY: 'k', HERMES_HOME: profile(), HERMES_REALTIME_MEDIA_SENDER: 'inline' }),
      { logger },
    );
    try {
      const answer = await app.inject({ url: '/v1/realtime/discovery', headers: { authorization: 'Bearer k' } });
      expect(answer.statusCode).toBe(200);
      const speech = {
        stt: { source: 'hermes', provider: 'openai', model: 'gpt-4o-mini-transcribe' },
        tts: { source: 'hermes', provider: 'openai', model: 'gpt-4o-mini-tts', voice: 'coral' },
      };
      expect(answer.json()).toMatchObject({ profile: 'mira', speech });
      expect(answer.body).not.toContain(PROFILE_KEY);
      const ready = logger.lines.map((line) => JSON.parse(line)).find((line) => line.event === 'gateway_ready');
      expect(ready.speech).toEqual(speech);
      expect(logger.lines.join('\n')).not.toContain(PROFILE_KEY);
    } finally {
      await app.close();
    }
  });

  it('says in discovery and the start-up log why a Hermes provider fell back', async () => {
    const logger = memoryLogger();
    const home = profileHome({ yaml: 'stt:\n  provider: local\ntts:\n  provider: neutts\n' });
    const app = await buildApp(
      loadConfig({ HERMES_REALTIME_API_KEY: 'k', HERMES_HOME: home, HERMES_REALTIME_MEDIA_SENDER: 'inline' }),
      { logger },
    );
    try {
      const answer = await app.inject({ url: '/v1/realtime/discovery', headers: { authorization: 'Bearer k' } });
      const { speech } = answer.json<{ speech: Record<string, { source: string; provider: string; note: string }> }>();
      expect(speech.stt).toMatchObject({ source: 'fallback', provider: 'stand-in' });
      expect(speech.stt?.note).toMatch(/stt\.provider local cannot be used here/);
      expect(speech.tts).toMatchObject({ source: 'fallback', provider: 'espeak' });
      expect(speech.tts?.note).toMatch(/tts\.provider neutts cannot be used here/);
      const ready = logger.lines.map((line) => JSON.parse(line)).find((line) => line.event === 'gateway_ready');
      expect(ready.speech).toEqual(speech);
      expect(ready.stt).toBe('none');
      expect(ready.tts).toMatch(/^espeak-ng/);
    } finally {
      await app.close();
    }
  });
});
