import { describe, expect, it } from 'vitest';
import { ClauseSplitter, prepareSpeechText } from '../../src/pipeline/speech-text.js';

describe('ClauseSplitter', () => {
  it('cuts streamed text at sentence ends, whatever the chunk boundaries', () => {
    const text = 'Sure. The kettle is on! Want tea? It takes four minutes';
    const whole = new ClauseSplitter();
    const expected = [...whole.push(text), ...whole.flush()];
    expect(expected).toEqual(['Sure.', 'The kettle is on!', 'Want tea?', 'It takes four minutes']);
    const streamed = new ClauseSplitter();
    const out: string[] = [];
    for (const char of text) out.push(...streamed.push(char));
    out.push(...streamed.flush());
    expect(out).toEqual(expected);
  });

  it('cuts long clauses at commas but keeps short ones together', () => {
    const splitter = new ClauseSplitter();
    expect(splitter.push('Yes, ')).toEqual([]);
    expect(splitter.push('and after we finish the long walk around the lake, we could stop for lunch ')).toEqual([
      'Yes, and after we finish the long walk around the lake,',
    ]);
  });

  it('holds an unfinished code block so its punctuation cannot split it', () => {
    const splitter = new ClauseSplitter();
    expect(splitter.push('Run this: ```a. b. c')).toEqual([]);
    expect(splitter.push('``` then done. ')).toEqual(['Run this: ```a. b. c``` then done.']);
  });
});

describe('prepareSpeechText', () => {
  it('drops code, URLs, paths, media tags and markdown punctuation', () => {
    expect(
      prepareSpeechText(
        '**Done!** See https://example.com/x and `npm test` in /home/u/project/src.\n\n\n# Next MEDIA:/tmp/a.png',
      ),
    ).toBe('Done! See and in\nNext');
    expect(prepareSpeechText('a'.repeat(5000))).toHaveLength(4000);
  });
});
