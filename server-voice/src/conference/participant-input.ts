import { PolledEndpointer } from '../audio/conference-endpointer.js';
import type { EndpointEvent, EndpointSettings, VoiceDetector, VoiceDetectorFactory } from '../audio/types.js';

/**
 * One room participant's capture (AUDIO.md §5): received 48 kHz audio is appended to a polled endpointer and
 * judged every 200 ms by `poll`. A model scores only the audio not yet classified, once and in order; audio
 * that arrives while a score is being computed waits and is appended after the decision, so the model and
 * the endpointer always judge the same samples. Mute finalizes an active utterance and ignores audio until
 * unmute, which recalibrates with a fresh detector.
 */
export class ParticipantInput {
  private detector: VoiceDetector;
  private readonly endpointer: PolledEndpointer;
  private held: { pcm: Int16Array; atUs: number }[] = [];
  private scoring = false;
  private mutedNow = false;
  private closed = false;

  constructor(
    readonly identity: string,
    private readonly factory: VoiceDetectorFactory,
    settings: EndpointSettings,
    private readonly onEvents: (identity: string, events: EndpointEvent[]) => void,
  ) {
    this.detector = factory.create();
    this.endpointer = new PolledEndpointer(this.detector.createGate(), settings);
  }

  get speaking(): boolean {
    return this.endpointer.speaking;
  }

  get muted(): boolean {
    return this.mutedNow;
  }

  push(pcm: Int16Array, atUs: number): void {
    if (this.closed || this.mutedNow) return;
    if (this.scoring) {
      this.held.push({ pcm, atUs });
      return;
    }
    this.emit(this.endpointer.append(pcm, atUs));
  }

  /** One detector pass (the session calls it every 200 ms). */
  async poll(nowUs: number): Promise<void> {
    if (this.closed || this.mutedNow || this.scoring) return;
    const detector = this.detector;
    let probability: number | null = null;
    if (detector.backend !== 'rms') {
      const fresh = this.endpointer.unclassified();
      if (fresh.length > 0) {
        this.scoring = true;
        try {
          probability = await detector.score(fresh);
        } catch {
          probability = null;
        } finally {
          this.scoring = false;
        }
        if (this.closed || detector !== this.detector) return;
      }
    }
    this.emit(this.endpointer.poll(nowUs, probability));
    for (const { pcm, atUs } of this.held.splice(0)) this.emit(this.endpointer.append(pcm, atUs));
  }

  /** `conference.control end-of-turn`, track unsubscribed, participant left: the buffer is dispatched now. */
  flushNow(nowUs: number): void {
    if (this.closed) return;
    for (const { pcm, atUs } of this.held.splice(0)) this.emit(this.endpointer.append(pcm, atUs));
    this.emit(this.endpointer.flushNow(nowUs));
  }

  mute(nowUs: number): void {
    if (this.closed || this.mutedNow) return;
    this.held = [];
    this.emit(this.endpointer.mute(nowUs));
    this.mutedNow = true;
  }

  unmute(): void {
    if (this.closed || !this.mutedNow) return;
    this.detector.close();
    this.detector = this.factory.create();
    this.endpointer.unmute(this.detector.createGate());
    this.mutedNow = false;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.held = [];
    this.detector.close();
  }

  private emit(events: EndpointEvent[]): void {
    if (events.length > 0 && !this.closed) this.onEvents(this.identity, events);
  }
}
