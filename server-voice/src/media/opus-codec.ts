import { Decoder, Encoder } from '@evan/opus';
import { SAMPLE_RATE_HZ } from '../audio/types.js';

/** The input rates libopus encodes from directly (its RTP clock stays 48 kHz whatever the input rate). */
const OPUS_INPUT_RATES: readonly number[] = [8_000, 12_000, 16_000, 24_000, 48_000];

/**
 * The rate a call's outbound speech is framed and encoded at for a speech provider of `providerRateHz`: the
 * provider's own rate when libopus takes it (24 kHz for OpenAI-compatible speech), so replies need no
 * resampling in JavaScript — libopus upsamples inside the encoder for a fraction of the cost — else 48 kHz.
 */
export function outboundRateFor(providerRateHz: number): number {
  return OPUS_INPUT_RATES.includes(providerRateHz) ? providerRateHz : SAMPLE_RATE_HZ;
}

/**
 * Opus for one direction of one call, on `@evan/opus`: libopus as a native addon whose prebuilt binaries
 * ship inside the npm package (no install script, no download), with a WebAssembly build of the same
 * library as the package's own fallback where no binary matches. Against the wasm-only `opusscript` it
 * takes about 40 % less CPU to encode and 40 % less to decode a 20 ms frame here (server-voice/README.md).
 * Encoders and decoders are stateful, so each call owns its own; the addon frees them when they are
 * collected, so `close()` only drops the reference.
 */
export class OpusEncoder {
  private codec: Encoder | null;
  /** Samples in one 20 ms frame at the input rate. */
  readonly frameSamples: number;

  /**
   * The gateway encodes synthesized speech with the `audio` application (libopus picks its CELT mode at
   * 32 kb/s mono, full band) at complexity 5: about a third of the CPU of the `voip` application's SILK/hybrid
   * mode per frame, and closer to the input (waveform SNR 14 dB against 11 dB on espeak-ng speech). Complexity
   * 5 halves encode time against the default 10 with no audible difference for speech at 32 kb/s.
   */
  constructor(
    private readonly options: {
      complexity?: number;
      bitrate?: number;
      application?: 'audio' | 'voip';
      sampleRateHz?: number;
    } = {},
  ) {
    const rate = options.sampleRateHz ?? SAMPLE_RATE_HZ;
    if (!OPUS_INPUT_RATES.includes(rate)) throw new RangeError(`Opus cannot encode from ${rate} Hz`);
    this.frameSamples = rate / 50;
    this.codec = new Encoder({
      channels: 1,
      sample_rate: rate as 8000 | 12000 | 16000 | 24000 | 48000,
      application: options.application ?? 'audio',
    });
    const codec = this.live();
    codec.complexity = (options.complexity ?? 5) as Encoder['complexity'];
    codec.bitrate = options.bitrate ?? 32_000;
  }

  /** Encodes one 20 ms frame of mono PCM16 at the encoder's rate (48 kHz unless told otherwise). */
  encode(frame: Int16Array): Buffer {
    if (frame.length !== this.frameSamples) throw new RangeError(`Opus frames are ${this.frameSamples} samples`);
    const packet = this.live().encode(frame);
    return Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength);
  }

  /** Forgets the encoder's history, so the next frame is coded as the start of a stream. */
  reset(): void {
    this.live().reset();
  }

  /**
   * The packet this encoder's settings give 20 ms of digital silence from a fresh state (a few bytes): what the
   * media sender repeats between replies, so a receiver that decoded it sees the state `reset()` starts from.
   */
  silencePacket(): Buffer {
    const fresh = new OpusEncoder(this.options);
    const packet = fresh.encode(new Int16Array(this.frameSamples));
    fresh.close();
    return packet;
  }

  close(): void {
    this.codec = null;
  }

  private live(): Encoder {
    if (!this.codec) throw new Error('Opus encoder closed');
    return this.codec;
  }
}

export class OpusDecoder {
  private codec: Decoder | null = new Decoder({ channels: 1, sample_rate: SAMPLE_RATE_HZ });

  /**
   * Decodes one RTP payload to 48 kHz mono PCM16 (a stereo stream is downmixed by libopus). Throws on a
   * corrupt packet; the caller drops it.
   */
  decode(payload: Uint8Array): Int16Array {
    if (!this.codec) throw new Error('Opus decoder closed');
    const bytes = this.codec.decode(payload);
    // The addon returns a fresh copy; view it in place when it is aligned, as it is (offset 0).
    if (bytes.byteOffset % 2 === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
    return new Int16Array(bytes.slice().buffer);
  }

  close(): void {
    this.codec = null;
  }
}
