import { describe, expect, it } from 'vitest';
import { concatPcm } from '../../src/audio/pcm.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import { SpeechProviderError } from '../../src/providers/types.js';

const audio = { pcm: new Int16Array(480), sampleRateHz: 48_000 };

describe('ScriptedSpeechToText', () => {
  it('answers in script order, repeats the last entry, and records calls', async () => {
    const stt = new ScriptedSpeechToText([' one ', 'two']);
    expect(await stt.transcribe(audio)).toBe('one');
    expect(await stt.transcribe(audio, { language: 'en' })).toBe('two');
    expect(await stt.transcribe(audio)).toBe('two');
    expect(stt.calls.map((call) => call.options)).toEqual([{}, { language: 'en' }, {}]);
  });

  it('fails when scripted to, and rejects with AbortError when aborted while waiting', async () => {
    await expect(new ScriptedSpeechToText([new SpeechProviderError('down', 503)]).transcribe(audio)).rejects.toThrow(
      'down',
    );
    const controller = new AbortController();
    const waiting = new ScriptedSpeechToText([{ text: 'never', after: new Promise(() => undefined) }]).transcribe(
      audio,
      {
        signal: controller.signal,
      },
    );
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('can answer from the audio', async () => {
    const stt = new ScriptedSpeechToText((utterance) => `${utterance.pcm.length} samples`);
    expect(await stt.transcribe(audio)).toBe('480 samples');
  });
});

describe('ScriptedTextToSpeech', () => {
  it('yields its rendered tone in fixed chunks and records the text', async () => {
    const tts = new ScriptedTextToSpeech({ chunkSamples: 1000 });
    const chunks: Int16Array[] = [];
    for await (const chunk of tts.synthesize('hello')) chunks.push(chunk);
    expect(concatPcm(chunks)).toEqual(tts.render('hello'));
    expect(chunks[0]?.length).toBe(1000);
    expect(tts.texts).toEqual(['hello']);
  });

  it('fails after the scripted number of chunks (0 = before any audio)', async () => {
    const before = new ScriptedTextToSpeech({ failure: { afterChunks: 0 } });
    const after = new ScriptedTextToSpeech({ failure: { afterChunks: 2 } });
    const count = async (tts: ScriptedTextToSpeech): Promise<number> => {
      let n = 0;
      try {
        for await (const _chunk of tts.synthesize('some words here')) n++;
      } catch (error) {
        expect(error).toBeInstanceOf(SpeechProviderError);
        return n;
      }
      throw new Error('expected a failure');
    };
    expect(await count(before)).toBe(0);
    expect(await count(after)).toBe(2);
  });
});
