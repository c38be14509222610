import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { warmUpConfiguredTurnPath } from '../../src/pipeline/providers-from-config.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';

/** TEST-NET-1 (RFC 5737): never routed, so a request that really went there would hang until the deadline. */
const NOWHERE = 'http://192.0.2.1:9/v1';

describe('provider warm-up before the gateway listens', () => {
  it('runs the configured OpenAI-compatible providers against a local stand-in: nothing leaves the machine', async () => {
    const config = loadConfig({
      HERMES_REALTIME_API_KEY: 'warm-key',
      HERMES_REALTIME_AGENT: 'openai',
      HERMES_REALTIME_AGENT_URL: NOWHERE,
      HERMES_REALTIME_AGENT_MODEL: 'model',
      HERMES_REALTIME_AGENT_KEY: 'agent-key',
      HERMES_REALTIME_STT_BASE_URL: NOWHERE,
      HERMES_REALTIME_TTS_PROVIDER: 'openai',
      HERMES_REALTIME_TTS_BASE_URL: NOWHERE,
    });
    const started = Date.now();
    expect(await warmUpConfiguredTurnPath(config, {})).toEqual(['agent', 'stt', 'tts']);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('warms local espeak-ng speech, and leaves alone what a test passed in and the echo agent', async () => {
    const config = loadConfig({ HERMES_REALTIME_API_KEY: 'warm-key', HERMES_REALTIME_TTS_PROVIDER: 'espeak' });
    expect(await warmUpConfiguredTurnPath(config, {})).toEqual(['tts']);
    const scripted = { stt: new ScriptedSpeechToText(['x']), tts: new ScriptedTextToSpeech() };
    expect(await warmUpConfiguredTurnPath(config, scripted)).toEqual([]);
    expect(scripted.stt.calls).toEqual([]);
  });
});
