import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryIo } from '../../src/probes/probe-io.js';
import { ttsCanaryCli } from '../../src/probes/tts-canary.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';

/** The profile's key: the fake speech server requires it, and it must never be printed. */
const PROFILE_KEY = 'sk-canary-profile-secret-4f1d2c';
let home: string;
let upstream: FakeUpstreams;

beforeAll(async () => {
  upstream = await startFakeUpstreams({ apiKey: PROFILE_KEY });
  home = await mkdtemp(path.join(os.tmpdir(), 'tts-canary-'));
  await writeFile(
    path.join(home, 'config.yaml'),
    `tts:\n  provider: openai\n  openai:\n    base_url: ${upstream.openAiBaseUrl}\n    model: canary-tts\n    voice: alloy\n`,
  );
  await writeFile(path.join(home, '.env'), `VOICE_TOOLS_OPENAI_KEY=${PROFILE_KEY}\n`);
});
afterAll(async () => {
  await upstream.close();
  await rm(home, { recursive: true, force: true });
});

describe('canary:tts', () => {
  it("speaks through the profile's provider and local RTP peers, printing timings and never the key", async () => {
    const io = memoryIo();
    const code = await ttsCanaryCli({ HERMES_TTS_CANARY_CONFIG: path.join(home, 'config.yaml') }, io);
    expect(io.stderr).toEqual([]);
    expect(code).toBe(0);
    const report = JSON.parse(io.stdout.join('\n')) as Record<string, unknown>;
    expect(report).toMatchObject({
      reference: 'text_submitted',
      provider: 'openai',
      model: 'canary-tts',
      voice: 'alloy',
    });
    for (const field of ['provider_first_byte_ms', 'first_audio_event_ms', 'first_audible_rtp_ms', 'total_ms'])
      expect(report[field]).toBeTypeOf('number');
    expect(report.first_audible_rtp_ms as number).toBeGreaterThanOrEqual(report.provider_first_byte_ms as number);
    expect(report.audible_packets).toBeGreaterThan(0);
    // The key reached the provider (the fake refuses requests without it)…
    expect(upstream.requests).toContain('POST /v1/audio/speech');
    // …and nowhere in what the canary printed.
    expect([...io.stdout, ...io.stderr].join('\n')).not.toContain(PROFILE_KEY);
  });

  it('refuses without HERMES_TTS_CANARY_CONFIG: a clear message and a non-zero exit', async () => {
    const io = memoryIo();
    expect(await ttsCanaryCli({}, io)).toBe(2);
    expect(io.stderr.join('\n')).toContain(
      "HERMES_TTS_CANARY_CONFIG is not set: point it at a Hermes profile's config.yaml",
    );
    expect(io.stdout).toEqual([]);
  });

  it('refuses a profile whose speech the gateway cannot use, naming why but not the key', async () => {
    const other = await mkdtemp(path.join(os.tmpdir(), 'tts-canary-edge-'));
    try {
      await writeFile(path.join(other, 'config.yaml'), 'tts:\n  provider: edge\n');
      await writeFile(path.join(other, '.env'), `OPENAI_API_KEY=${PROFILE_KEY}\n`);
      const io = memoryIo();
      expect(await ttsCanaryCli({ HERMES_TTS_CANARY_CONFIG: path.join(other, 'config.yaml') }, io)).toBe(2);
      expect(io.stderr.join('\n')).toContain('Edge TTS runs inside Hermes');
      expect(io.stderr.join('\n')).not.toContain(PROFILE_KEY);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});
