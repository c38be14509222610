import { PcmResampler } from '../audio/resampler.js';
import { SAMPLE_RATE_HZ } from '../audio/types.js';
import { concatPcm } from '../audio/pcm.js';
import { EspeakTextToSpeech } from '../providers/espeak-tts.js';

/**
 * Real synthetic speech for tests and the probe, made offline with espeak-ng and resampled to 48 kHz mono:
 * `leadSeconds` of silence, the sentence, then `tailSeconds` of silence.
 */
export async function spokenSentence(text: string, leadSeconds = 1, tailSeconds = 2): Promise<Int16Array> {
  const tts = new EspeakTextToSpeech({ voice: 'en-us' });
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize(text)) chunks.push(chunk);
  const resampler = new PcmResampler(tts.sampleRateHz, SAMPLE_RATE_HZ);
  const speech = concatPcm([resampler.process(concatPcm(chunks)), resampler.flush()]);
  return concatPcm([
    new Int16Array(Math.round(SAMPLE_RATE_HZ * leadSeconds)),
    speech,
    new Int16Array(Math.round(SAMPLE_RATE_HZ * tailSeconds)),
  ]);
}
