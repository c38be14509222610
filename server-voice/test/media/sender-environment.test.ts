import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SENDER_ENVIRONMENT_NAMES } from '../../src/media/media-sender.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';
import { startGatewayProcess, type GatewayProcess } from '../../src/testing/gateway-process.js';

/** Every secret the gateway may be started with, plus one that is none of its business. */
const SECRETS = {
  HERMES_REALTIME_API_KEY: 'secret-api-key-5b0c1f',
  HERMES_REALTIME_PROXY_SIGNING_KEY: 'secret-proxy-signing-key-91d2',
  HERMES_REALTIME_AGENT_KEY: 'secret-agent-key-77aa',
  HERMES_REALTIME_STT_API_KEY: 'secret-stt-key-3c3c',
  HERMES_REALTIME_TTS_API_KEY: 'secret-tts-key-e4e4',
  AWS_SECRET_ACCESS_KEY: 'secret-unrelated-cloud-key-0f0f',
};

/** What Node's fork adds for the IPC channel itself. */
const FORK_CHANNEL = ['NODE_CHANNEL_FD', 'NODE_CHANNEL_SERIALIZATION_MODE'];

let upstream: FakeUpstreams;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startFakeUpstreams({});
  gateway = await startGatewayProcess({
    ...SECRETS,
    HERMES_REALTIME_VAD_BACKEND: 'rms',
    HERMES_REALTIME_MEDIA_SENDER: 'process',
    HERMES_REALTIME_AGENT: 'openai',
    HERMES_REALTIME_AGENT_URL: upstream.openAiBaseUrl,
    HERMES_REALTIME_AGENT_MODEL: 'fake-model',
    HERMES_REALTIME_STT_BASE_URL: upstream.openAiBaseUrl,
    HERMES_REALTIME_TTS_PROVIDER: 'openai',
    HERMES_REALTIME_TTS_BASE_URL: upstream.openAiBaseUrl,
  });
});
afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

describe('the media sender process', () => {
  it('gets none of the secrets in the gateway environment, only the allow-listed names', () => {
    const started = gateway
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { event?: string; pid?: number })
      .find((line) => line.event === 'media_sender_started');
    expect(started?.pid).toBeGreaterThan(0);
    const pid = started?.pid as number;
    // What the kernel holds for the running process: its environment and its command line.
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const names = environ
      .split('\0')
      .filter(Boolean)
      .map((entry) => entry.slice(0, entry.indexOf('=')));
    expect(names).toContain('PATH');
    for (const name of names) expect([...SENDER_ENVIRONMENT_NAMES, ...FORK_CHANNEL]).toContain(name);
    for (const [name, value] of Object.entries(SECRETS)) {
      expect(environ).not.toContain(name);
      expect(environ).not.toContain(value);
      expect(cmdline).not.toContain(value);
    }
  });
});
