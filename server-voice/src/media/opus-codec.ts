import OpusScript from 'opusscript';
import { FRAME_SAMPLES, SAMPLE_RATE_HZ } from '../audio/types.js';

/** libopus `OPUS_SET_COMPLEXITY_REQUEST`. */
const SET_COMPLEXITY = 4010;
/** libopus `OPUS_SET_BITRATE_REQUEST`. */
const SET_BITRATE = 4002;

/**
 * Opus for one direction of one call (opusscript: libopus compiled to wasm, no native build). Encoders and
 * decoders are stateful, so each call owns its own. Complexity 5 halves encode time against the default
 * 10 with no audible difference for speech at 32 kb/s, which is what lets one core carry dozens of calls.
 */
export class OpusEncoder {
  private readonly codec = new OpusScript(SAMPLE_RATE_HZ, 1, OpusScript.Application.VOIP);

  constructor(options: { complexity?: number; bitrate?: number } = {}) {
    this.codec.encoderCTL(SET_COMPLEXITY, options.complexity ?? 5);
    this.codec.encoderCTL(SET_BITRATE, options.bitrate ?? 32_000);
  }

  /** Encodes one 20 ms frame of 48 kHz mono PCM16. */
  encode(frame: Int16Array): Buffer {
    if (frame.length !== FRAME_SAMPLES) throw new RangeError(`Opus frames are ${FRAME_SAMPLES} samples`);
    return this.codec.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength), FRAME_SAMPLES);
  }

  close(): void {
    this.codec.delete();
  }
}

export class OpusDecoder {
  private readonly codec = new OpusScript(SAMPLE_RATE_HZ, 1, OpusScript.Application.VOIP);

  /**
   * Decodes one RTP payload to 48 kHz mono PCM16 (a stereo stream is downmixed by libopus). Throws on a
   * corrupt packet; the caller drops it.
   */
  decode(payload: Buffer): Int16Array {
    const pcm = this.codec.decode(payload);
    const copy = new Int16Array(pcm.length / 2);
    Buffer.from(copy.buffer).set(pcm);
    return copy;
  }

  close(): void {
    this.codec.delete();
  }
}
