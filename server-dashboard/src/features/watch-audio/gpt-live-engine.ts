import type { RTCDataChannel, RTCPeerConnection as PeerConnection } from 'werift';
import { GPT_LIVE_VOICE_PATTERN } from '@conduit/contracts/dashboard/gpt-live';
import { DetailError } from '../../kernel/detail-errors.js';
import type { FeatureKernel } from '../../kernel/feature.js';
import { readProfileFiles } from '../../kernel/profile-files.js';
import { CHATGPT_ORIGIN, subscriptionSession } from '../../kernel/gpt-live/index.js';
import { gptLiveSettings } from '../../kernel/gpt-live/gpt-live-settings.js';
import { normaliseGreeting } from '../../kernel/gpt-live/session-request.js';
import { EngineRefusal, type EngineSession, type EngineStarter, type StartedSession } from './engine-session.js';
import { WATCH_AUDIO_LIMITS } from './watch-audio-limits.js';

/** The data channel OpenAI's realtime calls carry their events on. */
export const EVENTS_CHANNEL = 'oai-events';
/** Opus frames are 20 ms; RTP counts them on a 48 kHz clock whatever the coded rate. */
const FRAME_MS = 20;
const RTP_TICKS_PER_FRAME = 960;
/** Public STUN, so a host behind NAT offers OpenAI a reachable candidate (the reference's helper does too). */
const STUN_SERVERS = [{ urls: 'stun:stun.l.google.com:19302' }];

type Werift = typeof import('werift');
type Opus = typeof import('@evan/opus');

/** The in-process WebRTC and Opus modules: loaded once, on first need (status, prepare or a call). */
export interface GptLiveRuntime {
  werift: Werift;
  opus: Opus;
}

let loading: Promise<GptLiveRuntime> | undefined;

/** Loads werift and Opus (the TypeScript port's stand-in for the reference's aiortc venv). */
export function loadGptLiveRuntime(): Promise<GptLiveRuntime> {
  loading ??= (async () => ({ werift: await import('werift'), opus: await import('@evan/opus') }))();
  // A failed load may be retried by the next prepare.
  loading.catch(() => (loading = undefined));
  return loading;
}

function loopbackOrigin(origin: string): boolean {
  try {
    const host = new URL(origin).hostname;
    return host === '127.0.0.1' || host === 'localhost' || host === '[::1]';
  } catch {
    return false;
  }
}

function peerConfig(runtime: GptLiveRuntime, loopback: boolean): ConstructorParameters<Werift['RTCPeerConnection']>[0] {
  return {
    // A loopback upstream (a local stand-in) is reached over loopback only, with no STUN to wait for.
    iceServers: loopback ? [] : STUN_SERVERS,
    bundlePolicy: 'max-bundle',
    iceUseIpv6: false,
    ...(loopback
      ? {
          iceAdditionalHostAddresses: ['127.0.0.1'],
          iceFilterCandidatePair: (pair: { localCandidate: { host: string }; remoteCandidate: { host: string } }) =>
            pair.localCandidate.host === '127.0.0.1' && pair.remoteCandidate.host === '127.0.0.1',
        }
      : {}),
    codecs: {
      audio: [new runtime.werift.RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2 })],
    },
  };
}

let warming: Promise<void> | undefined;

/**
 * One local werift handshake per process before the first call: the first DTLS handshake of a fresh
 * process pays one-time costs (module loading, JIT, the certificate) long enough for the provider's DTLS
 * to retransmit, which werift copes with badly; a warmed process answers at once.
 */
function warmUp(runtime: GptLiveRuntime, timeoutMs: number): Promise<void> {
  warming ??= (async () => {
    const config = peerConfig(runtime, true);
    const a = new runtime.werift.RTCPeerConnection(config);
    const b = new runtime.werift.RTCPeerConnection(config);
    try {
      a.createDataChannel('warm-up');
      const opened = new Promise<void>((resolve) => b.onDataChannel.subscribe(() => resolve()));
      await a.setLocalDescription(await a.createOffer());
      await b.setRemoteDescription(a.localDescription ?? { type: 'offer', sdp: '' });
      await b.setLocalDescription(await b.createAnswer());
      await a.setRemoteDescription(b.localDescription ?? { type: 'answer', sdp: '' });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([opened, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs).unref()))]);
      clearTimeout(timer);
    } finally {
      await a.close();
      await b.close();
    }
  })();
  return warming;
}

/** The SDP exchange's refusals (the GPT-Live route's DetailErrors) as the Watch's control errors. */
function refusalOf(error: DetailError): EngineRefusal {
  if (error.status === 503) return new EngineRefusal('unavailable', error.message);
  if (error.status === 429) return new EngineRefusal('rate_limited', error.message);
  if (error.status === 504 || error.message.startsWith('Could not reach')) {
    return new EngineRefusal('unreachable', error.message);
  }
  if (error.status === 502) return new EngineRefusal('refused', error.message);
  return new EngineRefusal('failed', error.message);
}

/**
 * GPT-Live for a Watch call: the Watch can't run WebRTC, so this host holds the call with werift in this
 * process (the TypeScript port needs no Python helper) and carries the Watch's audio and events through
 * it. The SDP exchange is the GPT-Live route's own subscription path, with the host's Codex sign-in, so
 * the sign-in never leaves this host. Up, the Watch's 16 kHz PCM is coded to Opus on the call's audio
 * track; down, the call's Opus is decoded to 24 kHz PCM; the `oai-events` channel carries OpenAI's own
 * events both ways untouched.
 */
export function gptLiveEngine(kernel: FeatureKernel): EngineStarter {
  return async (profile, request, sink) => {
    const runtime = await loadGptLiveRuntime();
    const { werift, opus } = runtime;
    const loopback = loopbackOrigin(kernel.upstreams.chatgpt ?? CHATGPT_ORIGIN);
    await warmUp(runtime, WATCH_AUDIO_LIMITS.engineConnectTimeoutMs);
    const pc: PeerConnection = new werift.RTCPeerConnection(peerConfig(runtime, loopback));
    const track = new werift.MediaStreamTrack({ kind: 'audio' });
    const transceiver = pc.addTransceiver(track, { direction: 'sendrecv' });
    const channel: RTCDataChannel = pc.createDataChannel(EVENTS_CHANNEL);
    const encoder = new opus.Encoder({ channels: 1, sample_rate: WATCH_AUDIO_LIMITS.inputRateHz, application: 'voip' });
    const decoder = new opus.Decoder({ channels: 1, sample_rate: WATCH_AUDIO_LIMITS.outputRateHz });
    let closed = false;
    const close = async (): Promise<void> => {
      if (closed) return;
      closed = true;
      track.stop();
      await pc.close().catch(() => undefined);
    };

    pc.onTrack.subscribe((remote) => {
      remote.onReceiveRtp.subscribe((packet) => {
        if (closed) return;
        let pcm: Uint8Array;
        try {
          pcm = decoder.decode(packet.payload);
        } catch {
          return; // a corrupt packet is dropped, as a lost one would be
        }
        sink.audio(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
      });
    });
    channel.onMessage.subscribe((data) => {
      if (!closed) sink.event(typeof data === 'string' ? data : data.toString('utf8'));
    });
    pc.connectionStateChange.subscribe((state) => {
      if ((state === 'failed' || state === 'closed') && !closed) {
        void close();
        sink.ended('lost');
      }
    });

    let started: StartedSession;
    try {
      await pc.setLocalDescription(await pc.createOffer());
      const offer = pc.localDescription?.sdp ?? '';
      const settings = gptLiveSettings(await readProfileFiles(profile, kernel.serviceEnv));
      const voice = request.voice && GPT_LIVE_VOICE_PATTERN.test(request.voice) ? request.voice : undefined;
      const greeting = request.greeting === undefined ? undefined : normaliseGreeting(request.greeting);
      const session = await subscriptionSession(
        kernel,
        profile,
        {
          sdp: offer,
          history: request.history,
          voice,
          briefing: request.briefing,
          greeting,
          callOpening: false,
          billing: 'subscription',
        },
        settings,
      );
      await pc.setRemoteDescription({ type: 'answer', sdp: session.sdp });
      await new Promise<void>((resolve, reject) => {
        const cancel = kernel.timers.after(WATCH_AUDIO_LIMITS.engineConnectTimeoutMs, () =>
          reject(new EngineRefusal('unreachable', "GPT-Live's call didn't connect in time")),
        );
        const opened = (): void => {
          cancel();
          resolve();
        };
        if (channel.readyState === 'open') opened();
        else channel.stateChanged.subscribe((state) => state === 'open' && opened());
      });
      started = {
        model: settings.subscription.model,
        voice: session.voice,
        inputRateHz: WATCH_AUDIO_LIMITS.inputRateHz,
        outputRateHz: WATCH_AUDIO_LIMITS.outputRateHz,
        briefingApplied: request.briefing !== undefined,
        greetingApplied: greeting !== undefined,
      };
    } catch (error) {
      await close();
      if (error instanceof DetailError) throw refusalOf(error);
      throw error;
    }

    // The Watch's microphone, cut into 20 ms frames for Opus.
    const frameBytes = (WATCH_AUDIO_LIMITS.inputRateHz / 1000) * FRAME_MS * 2;
    let pending: Buffer = Buffer.alloc(0);
    let sequence = Math.floor(Math.random() * 0xffff);
    let timestamp = Math.floor(Math.random() * 0xffffffff);
    const sendFrame = (frame: Buffer): void => {
      const samples = new Int16Array(frame.length / 2);
      for (let index = 0; index < samples.length; index += 1) samples[index] = frame.readInt16LE(index * 2);
      const payload = encoder.encode(samples);
      const header = new werift.RtpHeader({
        payloadType: transceiver.codecs[0]?.payloadType ?? 111,
        sequenceNumber: sequence,
        timestamp,
        ssrc: transceiver.sender.ssrc,
        marker: false,
      });
      sequence = (sequence + 1) & 0xffff;
      timestamp = (timestamp + RTP_TICKS_PER_FRAME) >>> 0;
      track.writeRtp(new werift.RtpPacket(header, Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)));
    };

    const session: EngineSession = {
      started,
      audio(pcm) {
        if (closed) return;
        pending = pending.length ? Buffer.concat([pending, pcm]) : pcm;
        let offset = 0;
        for (; offset + frameBytes <= pending.length; offset += frameBytes)
          sendFrame(pending.subarray(offset, offset + frameBytes));
        pending = Buffer.from(pending.subarray(offset));
      },
      event(text) {
        if (!closed && channel.readyState === 'open') channel.send(text);
      },
      close,
    };
    return session;
  };
}
