import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RtcpSrPacket } from 'werift';
import { buildApp } from '../src/app.js';
import { ScriptedAgent } from '../src/agent/scripted-agent.js';
import { voiceConfig } from '../src/config.js';
import { memoryLogger } from '../src/log.js';
import { parseAudioSettings } from '../src/audio/settings.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../src/providers/scripted.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';
import { toneSpeech } from '../src/testing/gateway-process.js';

const KEY = 'turns-key';

// Both ways of pacing outbound audio: the gateway's own event loop, and the media sender process.
describe.each(['inline', 'process'] as const)('spoken turns on a call (%s media sender)', (mediaSender) => {
  let app: FastifyInstance;
  let url: string;
  const logger = memoryLogger();

  beforeAll(async () => {
    app = await buildApp(
      voiceConfig({
        apiKey: KEY,
        bargeIn: true,
        audio: parseAudioSettings({ vad_backend: 'rms', silence_duration: 0.5 }),
        mediaSender,
      }),
      {
        stt: new ScriptedSpeechToText(['tell me a long story']),
        // A long reply: about eight seconds of speech.
        tts: new ScriptedTextToSpeech({ samplesFor: (_text, rate) => rate * 8 }),
        agent: new ScriptedAgent(() => [{ delta: 'Once upon a time there was a very long story.' }]),
        logger,
      },
    );
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => app.close());

  it('barge-in: speech over a reply cancels it at once and clears queued audio', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      await client.speak(toneSpeech(0.8, 0.5));
      const started = await client.waitForType('output_audio_buffer.started', { timeoutMs: 20_000 });
      const from = client.events.indexOf(started);
      void client.speak(toneSpeech(0.8, 0));
      const done = await client.waitForType('response.done', { from, timeoutMs: 20_000 });
      expect(done.event).toMatchObject({ response: { status: 'cancelled' } });
      // The gateway publishes done, cleared and the new speech_started together; let them all arrive.
      await client.waitForType('input_audio_buffer.speech_started', { from, timeoutMs: 10_000 });
      const after = client.types().slice(from);
      expect(after).toContain('output_audio_buffer.cleared');
      expect(after).toContain('input_audio_buffer.speech_started');
      expect(after).not.toContain('output_audio_buffer.stopped');
      // Speech stopped arriving: no audible frames a little after the cancellation.
      await client.waitUntil(
        () => (client.packets.at(-1)?.atMs ?? 0) > done.atMs + 400 || undefined,
        10_000,
        'packets',
      );
      expect(
        client.packets.filter((p) => p.atMs > done.atMs + 300 && p.atMs < done.atMs + 400 && p.peak > 500),
      ).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('the endpoint log line says the backend, the observed silence, the target and the learned noise RMS', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      await client.speak(toneSpeech(0.8, 0.5));
      await client.waitForType('input_audio_buffer.speech_stopped', { timeoutMs: 10_000 });
      const line = logger.lines
        .map((text) => JSON.parse(text) as Record<string, unknown>)
        .find((entry) => entry.event === 'endpoint' && entry.call_id === client.callId);
      expect(line).toMatchObject({ backend: 'rms', silence_duration_ms: 500 });
      // Endpointed on the first received frame at or past the target (frames arrive every ~20 ms).
      expect(line?.observed_silence_ms).toBeGreaterThanOrEqual(500);
      expect(line?.observed_silence_ms).toBeLessThan(700);
      // The client sends digital silence between words, so the room it learned is (near) silent.
      expect(typeof line?.noise_rms).toBe('number');
      expect(line?.noise_rms).toBeLessThan(50);
      // Levels and timings only: no audio, no transcript.
      expect(Object.keys(line ?? {}).sort()).toEqual(
        [
          'at_ms',
          'backend',
          'call_id',
          'event',
          'level',
          'noise_rms',
          'observed_silence_ms',
          'silence_duration_ms',
          'time',
        ].sort(),
      );
    } finally {
      await client.close();
    }
  });

  it('mute ignores the microphone; unmute recalibrates and listens again', async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      await client.waitForType('session.created');
      client.send({ type: 'hermes.input_audio.state', muted: true });
      await client.waitForEvent((e) => e.type === 'hermes.input_audio.state_updated' && e.muted);
      await client.speak(toneSpeech(0.8, 0.5, 0.8));
      expect(client.types()).not.toContain('input_audio_buffer.speech_started');
      client.send({ type: 'hermes.input_audio.state', muted: false });
      await client.waitForEvent((e) => e.type === 'hermes.input_audio.state_updated' && !e.muted);
      await client.speak(toneSpeech(0.8, 0.6));
      await client.waitForType('input_audio_buffer.speech_started', { timeoutMs: 10_000 });
    } finally {
      await client.close();
    }
  });

  it("outbound RTP carries the answer's SSRC in one unbroken sequence, and sender reports count what was sent", async () => {
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      const receiver = client.pc.getTransceivers()[0]!.receiver;
      const headers: { ssrc: number; sequence: number; timestamp: number }[] = [];
      receiver.tracks[0]?.onReceiveRtp.subscribe((packet) =>
        headers.push({
          ssrc: packet.header.ssrc,
          sequence: packet.header.sequenceNumber,
          timestamp: packet.header.timestamp,
        }),
      );
      const reports: RtcpSrPacket[] = [];
      receiver.onRtcp.subscribe((packet) => {
        if (packet instanceof RtcpSrPacket) reports.push(packet);
      });
      await client.waitUntil(() => (reports.length >= 2 ? true : undefined), 5_000, 'two sender reports');
      const announced = /^a=ssrc:(\d+) /m.exec(client.pc.remoteDescription?.sdp ?? '')?.[1];
      expect(announced).toBeDefined();
      expect(new Set(headers.map((h) => h.ssrc))).toEqual(new Set([Number(announced)]));
      for (let i = 1; i < headers.length; i += 1) {
        expect((headers[i]!.sequence - headers[i - 1]!.sequence) & 0xffff).toBe(1);
        expect((headers[i]!.timestamp - headers[i - 1]!.timestamp) >>> 0).toBe(960);
      }
      const last = reports.at(-1)!;
      expect(last.ssrc).toBe(Number(announced));
      // The report counts every packet sent so far: what arrived here, give or take the ones in flight.
      expect(Math.abs(last.senderInfo.packetCount - headers.length)).toBeLessThanOrEqual(3);
      expect(last.senderInfo.octetCount).toBeGreaterThan(0);
      // The process did the sending: it started, and the call was handed to it (not paced here instead).
      const events = logger.lines.map((line) => (JSON.parse(line) as { event: string }).event);
      if (mediaSender === 'process') expect(events).toContain('media_sender_started');
      else expect(events).not.toContain('media_sender_started');
      expect(events).not.toContain('media_sender_local');
      // Its NTP time is now (seconds since 1900) and its RTP time is on the stream's 48 kHz clock.
      const ntpSeconds = Number(last.senderInfo.ntpTimestamp >> 32n) - 2_208_988_800;
      expect(Math.abs(ntpSeconds - Date.now() / 1000)).toBeLessThan(5);
      const lastHeader = headers.at(-1)!;
      expect(Math.abs(((last.senderInfo.rtpTimestamp - lastHeader.timestamp) | 0) / 48)).toBeLessThan(1000);
    } finally {
      await client.close();
    }
  });
});
