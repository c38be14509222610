/**
 * `npm run probe:voice`: end-to-end latency of one spoken turn. A werift client speaks a synthetic question
 * (espeak-ng, offline) through a gateway and prints, as JSON, when the endpoint, the transcript, the first
 * audio event and the first audible RTP packet arrived, measured from the last voiced frame it sent.
 *
 *   npm run probe:voice                          # starts its own gateway with local fake STT/agent/TTS servers
 *   npm run probe:voice -- --gateway URL --key K # probes a running gateway (its own providers)
 */
import { parseArgs } from 'node:util';
import { pcmRms } from '../src/audio/pcm.js';
import { FRAME_SAMPLES } from '../src/audio/types.js';
import { startFakeUpstreams } from '../src/testing/fake-upstreams.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';
import { spokenSentence } from '../src/testing/spoken-fixture.js';
import { startGatewayProcess } from '../src/testing/gateway-process.js';

const QUESTION = 'What is the weather like in Lisbon today?';
const { values } = parseArgs({
  options: {
    gateway: { type: 'string' },
    key: { type: 'string' },
    silence: { type: 'string', default: '0.7' },
    timeout: { type: 'string', default: '30000' },
  },
});

const upstream = values.gateway
  ? null
  : await startFakeUpstreams({
      transcript: () => QUESTION,
      reply: () => ['Sunny and mild. ', 'About twenty degrees.'],
    });
const key = values.key ?? 'probe-key';
const gateway = values.gateway
  ? null
  : await startGatewayProcess({
      HERMES_REALTIME_API_KEY: key,
      HERMES_REALTIME_VAD_BACKEND: 'rms',
      HERMES_REALTIME_SILENCE_DURATION: values.silence,
      HERMES_REALTIME_AGENT: 'openai',
      HERMES_REALTIME_AGENT_URL: upstream?.openAiBaseUrl ?? '',
      HERMES_REALTIME_AGENT_MODEL: 'probe',
      HERMES_REALTIME_STT_BASE_URL: upstream?.openAiBaseUrl ?? '',
      HERMES_REALTIME_TTS_PROVIDER: 'openai',
      HERMES_REALTIME_TTS_BASE_URL: upstream?.openAiBaseUrl ?? '',
    });
const baseUrl = values.gateway ?? gateway?.url ?? '';

try {
  const pcm = await spokenSentence(QUESTION, 1, 2);
  let lastVoicedFrame = -1;
  for (let frame = 0; frame * FRAME_SAMPLES < pcm.length; frame += 1)
    if (pcmRms(pcm, frame * FRAME_SAMPLES, Math.min(pcm.length, (frame + 1) * FRAME_SAMPLES)) > 300)
      lastVoicedFrame = frame;
  const client = await RealtimeClient.connect({ baseUrl, apiKey: key });
  await client.waitForType('session.created');
  let lastVoicedAt = 0;
  await client.speak(pcm, (index, atMs) => {
    if (index === lastVoicedFrame) lastVoicedAt = atMs;
  });
  const timeoutMs = Number(values.timeout);
  const endpoint = await client.waitForType('input_audio_buffer.speech_stopped', { timeoutMs });
  const transcript = await client.waitForType('conversation.item.input_audio_transcription.completed', { timeoutMs });
  const audioEvent = await client.waitForType('output_audio_buffer.started', { timeoutMs });
  const audible = await client.waitUntil(() => client.firstAudiblePacket(lastVoicedAt), timeoutMs, 'audible RTP');
  await client.waitForType('output_audio_buffer.stopped', { timeoutMs });
  const since = (ms: number) => Math.round(ms - lastVoicedAt);
  const speechStopped = client.events.filter((e) => e.event.type === 'input_audio_buffer.speech_stopped').length;
  console.log(
    JSON.stringify(
      {
        call_id: client.callId,
        reference: 'last_voiced_frame_sent',
        silence_duration_s: Number(values.silence),
        endpoint_ms: since(endpoint.atMs),
        transcript_ms: since(transcript.atMs),
        first_audio_event_ms: since(audioEvent.atMs),
        first_audible_rtp_ms: since(audible.atMs),
        transcript:
          transcript.event.type === 'conversation.item.input_audio_transcription.completed'
            ? transcript.event.transcript
            : '',
        valid: speechStopped === 1,
      },
      null,
      2,
    ),
  );
  await client.close();
} finally {
  await gateway?.stop();
  await upstream?.close();
}
process.exit(0);
