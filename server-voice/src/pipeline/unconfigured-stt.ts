import { SAMPLE_RATE_HZ } from '../audio/types.js';
import type { SpeechToText, UtteranceAudio } from '../providers/types.js';

/**
 * Stands in when no transcription endpoint is configured: instead of silently dropping speech, it reports
 * what was heard in a clearly labelled transcript, so the echo agent still answers a spoken turn and a new
 * user can hear the whole path work.
 */
export class UnconfiguredSpeechToText implements SpeechToText {
  readonly label = 'none';

  transcribe(audio: UtteranceAudio): Promise<string> {
    const seconds = audio.pcm.length / (audio.sampleRateHz || SAMPLE_RATE_HZ);
    return Promise.resolve(`(speech-to-text is not configured; I heard ${seconds.toFixed(1)} seconds of speech)`);
  }
}
