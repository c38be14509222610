import type { ConvertedAudio, SpeechToText } from '../providers/types.js';
import { pcmRms } from './pcm.js';
import { FRAME_SAMPLES, SAMPLE_RATE_HZ } from './types.js';

/**
 * May a transcript of `snapshot` stand for `final`? Only when they agree on their shared prefix and every
 * 20 ms window of the part that differs (final longer, or final trimmed shorter) is quiet: RMS at most the
 * gate's stop threshold. An energy check, not proof that very quiet speech was absent.
 */
export function prefetchReusable(snapshot: Int16Array, final: Int16Array, quietThresholdRms: number): boolean {
  const shared = Math.min(snapshot.length, final.length);
  for (let i = 0; i < shared; i++) if (snapshot[i] !== final[i]) return false;
  const tail = snapshot.length > final.length ? snapshot.subarray(shared) : final.subarray(shared);
  for (let start = 0; start < tail.length; start += FRAME_SAMPLES)
    if (pcmRms(tail, start, Math.min(tail.length, start + FRAME_SAMPLES)) > quietThresholdRms) return false;
  return true;
}

interface Candidate {
  markerUs: number;
  snapshot: Int16Array;
  transcript: Promise<string>;
}

/** How a final transcript was obtained, for the log line. */
export interface FinalTranscript {
  text: string;
  reusedPrefetch: boolean;
}

/**
 * Speculative ("early") transcription for one input (AUDIO.md §6): after a qualifying pause, one request runs
 * in the background; at the endpoint its result is reused only under `prefetchReusable`, and an empty or failed
 * early result falls back to a normal transcription. At most one early request is in flight per input, and a
 * discarded candidate is not cancelled (its result is ignored), so a pause followed by more speech can cost
 * an extra request.
 */
export class EarlyTranscription {
  private candidate: Candidate | null = null;
  private running: Promise<unknown> | null = null;
  private lastStartedMarkerUs: number | null = null;

  constructor(
    private readonly stt: SpeechToText,
    private readonly sampleRateHz = SAMPLE_RATE_HZ,
  ) {}

  /** Starts an early request for `pcm` (copied). Refused while one runs or when this marker already started. */
  start(pcm: Int16Array, markerUs: number): boolean {
    if (this.running !== null || this.lastStartedMarkerUs === markerUs) return false;
    this.lastStartedMarkerUs = markerUs;
    const snapshot = pcm.slice();
    const transcript = this.stt.transcribe({ pcm: snapshot, sampleRateHz: this.sampleRateHz });
    const running = transcript.then(
      () => undefined,
      () => undefined,
    );
    this.running = running;
    void running.then(() => {
      if (this.running === running) this.running = null;
    });
    // An early failure is never fatal: `take` falls back to a normal transcription.
    transcript.catch(() => undefined);
    this.candidate = { markerUs, snapshot, transcript };
    return true;
  }

  /** Drops the candidate (new speech, overflow, mute); a request in flight keeps running, ignored. */
  discard(): void {
    this.candidate = null;
  }

  /**
   * The final transcript of `final`: the early candidate's when it is reusable and non-empty, else a normal
   * transcription. Waiting for the candidate is not cut short by `signal`; the fallback request is.
   */
  async transcribeFinal(
    final: Int16Array,
    markerUs: number,
    quietThresholdRms: number,
    signal?: AbortSignal,
    /** `final` already converted to the provider's upload rate during capture. */
    converted?: ConvertedAudio,
  ): Promise<FinalTranscript> {
    const candidate = this.candidate;
    this.candidate = null;
    if (
      candidate &&
      candidate.markerUs === markerUs &&
      prefetchReusable(candidate.snapshot, final, quietThresholdRms)
    ) {
      const early = await candidate.transcript.then(
        (text) => text.trim(),
        () => '',
      );
      if (early !== '') return { text: early, reusedPrefetch: true };
    }
    const text = await this.stt.transcribe(
      { pcm: final, sampleRateHz: this.sampleRateHz, ...(converted ? { converted } : {}) },
      signal ? { signal } : {},
    );
    return { text: text.trim(), reusedPrefetch: false };
  }
}
