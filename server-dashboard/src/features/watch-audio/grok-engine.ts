import WebSocket, { type RawData } from 'ws';
import type { FeatureKernel } from '../../kernel/feature.js';
import { readProfileFiles } from '../../kernel/profile-files.js';
import { grokSettings, XAI_REALTIME_ORIGIN } from '../../kernel/grok-live/grok-settings.js';
import { xaiCredential } from '../../kernel/grok-live/xai-credentials.js';
import { AudioPacer } from './audio-pacer.js';
import { EngineRefusal, type EngineSession, type EngineStarter, type StartedSession } from './engine-session.js';
import { WATCH_AUDIO_LIMITS } from './watch-audio-limits.js';

/** xAI's reply-audio events (the GA name and the beta one); their PCM goes down as audio, not as events. */
const AUDIO_DELTA_TYPES = new Set(['response.output_audio.delta', 'response.audio.delta']);
/** xAI heard the user start speaking: whatever of the reply is still queued is dropped. */
const SPEECH_STARTED = 'input_audio_buffer.speech_started';

function textOf(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

/** The type and audio delta of an xAI event, read without trusting its shape. */
function eventFields(text: string): { type: string | undefined; delta: string | undefined } {
  try {
    const event = JSON.parse(text) as unknown;
    if (typeof event !== 'object' || event === null) return { type: undefined, delta: undefined };
    const { type, delta } = event as { type?: unknown; delta?: unknown };
    return {
      type: typeof type === 'string' ? type : undefined,
      delta: typeof delta === 'string' ? delta : undefined,
    };
  } catch {
    return { type: undefined, delta: undefined };
  }
}

/** The HTTP status xAI refused the handshake with, as the Watch's control error. */
function refusalOf(status: number, auth: 'subscription' | 'api_key'): EngineRefusal {
  const credential = auth === 'subscription' ? 'the SuperGrok sign-in' : 'the XAI_API_KEY';
  if (status === 401 || status === 403)
    return new EngineRefusal('refused', `xAI refused ${credential} (HTTP ${status})`);
  if (status === 429) return new EngineRefusal('rate_limited', `xAI is limiting this account (HTTP ${status})`);
  return new EngineRefusal('unreachable', 'Could not reach xAI');
}

/**
 * Grok for a Watch call: xAI's realtime socket opened with this host's xAI sign-in (or XAI_API_KEY), read
 * exactly as the Grok Live route reads it, so the credential never leaves the host. The Watch speaks xAI's
 * own events; its microphone audio becomes `input_audio_buffer.append`, and the reply's audio deltas go
 * down as audio, paced at real time with a little lead and dropped when the user speaks over them.
 */
export function grokEngine(kernel: FeatureKernel): EngineStarter {
  return async (profile, request, sink) => {
    const files = await readProfileFiles(profile, kernel.serviceEnv);
    const credential = await xaiCredential(kernel.hermesHome, profile, files, kernel.clock.now());
    if (!credential) {
      throw new EngineRefusal(
        'unavailable',
        'Grok needs a SuperGrok sign-in (hermes auth add xai-oauth) or XAI_API_KEY on the Hermes host',
      );
    }
    const settings = grokSettings(files);
    const voice = request.voice ?? settings.voice;
    const url = new URL('/v1/realtime', kernel.upstreams.xai ?? XAI_REALTIME_ORIGIN);
    url.searchParams.set('model', settings.model);
    const socket = new WebSocket(url, {
      headers: { Authorization: `Bearer ${credential.bearer}` },
      perMessageDeflate: false,
      followRedirects: false,
      handshakeTimeout: WATCH_AUDIO_LIMITS.engineConnectTimeoutMs,
    });
    // Listening before the socket opens: xAI sends its first event with the handshake's answer.
    const pacer = new AudioPacer({
      sampleRateHz: WATCH_AUDIO_LIMITS.outputRateHz,
      leadMs: WATCH_AUDIO_LIMITS.grokLeadMs,
      chunkMs: WATCH_AUDIO_LIMITS.grokChunkMs,
      clock: kernel.clock,
      timers: kernel.timers,
      release: (pcm) => sink.audio(pcm),
    });
    let closedHere = false;
    let opened = false;
    socket.on('message', (data: RawData, isBinary: boolean) => {
      if (isBinary) return;
      const text = textOf(data);
      const { type, delta } = eventFields(text);
      if (type !== undefined && AUDIO_DELTA_TYPES.has(type) && delta !== undefined) {
        pacer.push(Buffer.from(delta, 'base64'));
        return;
      }
      if (type === SPEECH_STARTED) pacer.flush();
      sink.event(text);
    });
    socket.on('close', (code: number) => {
      pacer.close();
      if (closedHere || !opened) return;
      sink.ended(code === 1000 ? 'ended' : code >= 3000 && code <= 4999 ? 'refused' : 'lost');
    });

    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('unexpected-response', (_request, response) => {
        response.resume();
        socket.terminate();
        reject(refusalOf(response.statusCode ?? 0, credential.auth));
      });
      socket.once('error', () => reject(new EngineRefusal('unreachable', 'Could not reach xAI')));
    });
    socket.on('error', () => undefined);
    opened = true;

    // The formats the Watch streams and plays, the voice, and the briefing as instructions.
    socket.send(
      JSON.stringify({
        type: 'session.update',
        session: {
          voice,
          ...(request.briefing ? { instructions: request.briefing } : {}),
          audio: {
            input: { format: { type: 'audio/pcm', rate: WATCH_AUDIO_LIMITS.inputRateHz } },
            output: { format: { type: 'audio/pcm', rate: WATCH_AUDIO_LIMITS.outputRateHz } },
          },
        },
      }),
    );
    const started: StartedSession = {
      model: settings.model,
      voice,
      inputRateHz: WATCH_AUDIO_LIMITS.inputRateHz,
      outputRateHz: WATCH_AUDIO_LIMITS.outputRateHz,
      briefingApplied: request.briefing !== undefined,
      greetingApplied: false,
    };
    const session: EngineSession = {
      started,
      audio(pcm) {
        if (socket.readyState !== WebSocket.OPEN) return;
        socket.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') }));
      },
      event(text) {
        if (socket.readyState === WebSocket.OPEN) socket.send(text);
      },
      async close() {
        closedHere = true;
        pacer.close();
        if (socket.readyState === WebSocket.CLOSED) return;
        const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
        socket.close(1000, 'call ended');
        const cancel = kernel.timers.after(2000, () => socket.terminate());
        await closed;
        cancel();
      },
    };
    return session;
  };
}
