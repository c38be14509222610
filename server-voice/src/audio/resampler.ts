/**
 * A stateful rational resampler (polyphase, Kaiser-windowed sinc) for PCM16 mono streams.
 *
 * State carries across chunks, so the output for a stream is the same whatever its chunking — required both
 * for the Silero path (48 kHz → 16 kHz per received frame) and for streamed speech (a provider's rate →
 * 48 kHz per HTTP chunk). The filter is centred, so output sample k lines up with input time k·in/out.
 */

/** Zero crossings of the sinc on each side, counted at the lower of the two rates: the filter's reach. */
const HALF_ZEROS = 16;
/** Pass band as a fraction of the lower Nyquist frequency; the rest is the transition band. */
const ROLLOFF = 0.92;
/** Kaiser window shape (≈ 80 dB stop band). */
const KAISER_BETA = 8.0;

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** Zeroth-order modified Bessel function of the first kind (for the Kaiser window). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const half = x / 2;
  for (let k = 1; k < 50; k++) {
    term *= (half / k) * (half / k);
    sum += term;
    if (term < 1e-12 * sum) break;
  }
  return sum;
}

interface Filter {
  up: number;
  down: number;
  /** Taps per phase. */
  taps: number;
  /** `phases[p][j]` multiplies input sample `iMax - j` for phase p. */
  phases: Float64Array[];
  /** The same taps reversed, phase after phase (`taps` each): tap j multiplies input `iMax - taps + 1 + j`. */
  forward: Float64Array;
  /** Centre of the prototype filter, in upsampled samples. */
  centre: number;
}

const filterCache = new Map<string, Filter>();

function designFilter(inputRateHz: number, outputRateHz: number): Filter {
  const key = `${inputRateHz}:${outputRateHz}`;
  const cached = filterCache.get(key);
  if (cached) return cached;
  const divisor = gcd(inputRateHz, outputRateHz);
  const up = outputRateHz / divisor;
  const down = inputRateHz / divisor;
  const widest = Math.max(up, down);
  // Cutoff in cycles per upsampled sample (Nyquist of the upsampled stream = 0.5).
  const cutoff = (0.5 * ROLLOFF) / widest;
  const length = 2 * HALF_ZEROS * widest + 1;
  const centre = (length - 1) / 2;
  const taps = Math.ceil(length / up);
  const phases = Array.from({ length: up }, () => new Float64Array(taps));
  const denominator = besselI0(KAISER_BETA);
  for (let n = 0; n < length; n++) {
    const t = n - centre;
    const sinc = t === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * t) / (Math.PI * t);
    const ratio = t / centre;
    const window = besselI0(KAISER_BETA * Math.sqrt(Math.max(0, 1 - ratio * ratio))) / denominator;
    // × up: zero-stuffing divides the signal's energy by `up`.
    (phases[n % up] as Float64Array)[Math.floor(n / up)] = sinc * window * up;
  }
  const forward = new Float64Array(up * taps);
  for (let p = 0; p < up; p++)
    for (let j = 0; j < taps; j++) forward[p * taps + j] = (phases[p] as Float64Array)[taps - 1 - j] as number;
  const filter = { up, down, taps, phases, forward, centre };
  filterCache.set(key, filter);
  return filter;
}

/** Resamples one PCM16 mono stream from `inputRateHz` to `outputRateHz`, chunk by chunk. */
export class PcmResampler {
  readonly inputRateHz: number;
  readonly outputRateHz: number;
  private readonly filter: Filter | null;
  /** Input samples still needed, starting at global input index `historyStart`. */
  private history: Float64Array = new Float64Array(0);
  private historyStart = 0;
  private inputCount = 0;
  private outputCount = 0;
  private flushed = false;

  constructor(inputRateHz: number, outputRateHz: number) {
    for (const [name, rate] of [
      ['input', inputRateHz],
      ['output', outputRateHz],
    ] as const)
      if (!Number.isInteger(rate) || rate < 1000 || rate > 384_000)
        throw new RangeError(`${name} sample rate must be an integer between 1000 and 384000 Hz, got ${rate}`);
    this.inputRateHz = inputRateHz;
    this.outputRateHz = outputRateHz;
    this.filter = inputRateHz === outputRateHz ? null : designFilter(inputRateHz, outputRateHz);
  }

  /** Resamples the next chunk; returns every output sample that the input so far determines. */
  process(pcm: Int16Array): Int16Array {
    if (this.flushed) throw new Error('resampler already flushed');
    if (!this.filter) return pcm.slice();
    this.appendInput(pcm, pcm.length);
    this.inputCount += pcm.length;
    return this.produce(this.inputCount);
  }

  /**
   * Ends the stream: emits the tail (as if followed by silence) so the total output is
   * ceil(input × out / in) samples. The resampler cannot be used afterwards.
   */
  flush(): Int16Array {
    if (this.flushed) return new Int16Array(0);
    this.flushed = true;
    if (!this.filter) return new Int16Array(0);
    const { up, taps, centre } = this.filter;
    // Enough trailing silence for the last outputs' filter windows.
    this.appendInput(null, taps + Math.ceil(centre / up) + 1);
    return this.produce(Number.POSITIVE_INFINITY);
  }

  private appendInput(pcm: Int16Array | null, count: number): void {
    const next = new Float64Array(this.history.length + count);
    next.set(this.history);
    if (pcm) for (let i = 0; i < count; i++) next[this.history.length + i] = pcm[i] as number;
    this.history = next;
  }

  private produce(availableInputs: number): Int16Array {
    const filter = this.filter as Filter;
    const { up, down, taps, phases, forward, centre } = filter;
    const limit = Math.min(availableInputs, this.historyStart + this.history.length);
    // Output k needs input floor((k·down + centre) / up) < limit.
    let end = Math.max(this.outputCount, Math.ceil((limit * up - centre) / down));
    if (availableInputs === Number.POSITIVE_INFINITY) end = Math.min(end, Math.ceil((this.inputCount * up) / down));
    const pcm = new Int16Array(Math.max(0, end - this.outputCount));
    const history = this.history;
    const historyStart = this.historyStart;
    // The hot loop walks history and taps forward with integer positions (this runs for every output sample of
    // every reply and every upload, so it avoids divisions and bounds-varying loops where it can).
    let position = this.outputCount * down + centre;
    let newest = Math.floor(position / up);
    let phase = position - newest * up;
    for (let n = 0; n < pcm.length; n++) {
      const reach = newest - historyStart + 1;
      let sum = 0;
      if (reach >= taps) {
        const base = phase * taps;
        const first = reach - taps;
        // Four products per step: fewer loop checks, and independent partial sums that can overlap.
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        let j = 0;
        for (; j + 3 < taps; j += 4) {
          s0 += (forward[base + j] as number) * (history[first + j] as number);
          s1 += (forward[base + j + 1] as number) * (history[first + j + 1] as number);
          s2 += (forward[base + j + 2] as number) * (history[first + j + 2] as number);
          s3 += (forward[base + j + 3] as number) * (history[first + j + 3] as number);
        }
        for (; j < taps; j++) s0 += (forward[base + j] as number) * (history[first + j] as number);
        sum = s0 + s1 + s2 + s3;
      } else {
        // Before the stream began the input is silence: stop at the first missing sample.
        const coefficients = phases[phase] as Float64Array;
        for (let j = 0, index = reach - 1; j < reach; j++, index--)
          sum += (coefficients[j] as number) * (history[index] as number);
      }
      pcm[n] = sum > 32767 ? 32767 : sum < -32768 ? -32768 : Math.round(sum);
      position += down;
      phase += down;
      while (phase >= up) {
        phase -= up;
        newest += 1;
      }
    }
    this.outputCount = end > this.outputCount ? end : this.outputCount;
    // Keep only the inputs the next output can still reach.
    const nextNewest = Math.floor((this.outputCount * down + centre) / up);
    const keepFrom = Math.max(this.historyStart, nextNewest - taps + 1);
    if (keepFrom > this.historyStart) {
      this.history = this.history.slice(keepFrom - this.historyStart);
      this.historyStart = keepFrom;
    }
    return pcm;
  }
}
