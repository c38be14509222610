import { describe, expect, it } from 'vitest';
import { cronJobId } from '../../src/notifier/cron-run.js';
import { eventId } from '../../src/notifier/event-id.js';
import { clarificationText, clarifyDecision, normaliseClarify } from '../../src/notifier/events.js';
import { clean, plainText } from '../../src/notifier/text.js';
import { replySourceOf } from '../../src/notifier/reply-source.js';

describe('event ids', () => {
  it('match the reference (sha256 of Python compact JSON with ensure_ascii, 32 hex)', () => {
    // Expected values computed with Python: json.dumps([p.strip() for p in parts], separators=(",", ":")).
    expect(eventId('response', 't1', 's1')).toBe('response:719606ff9f9fa04e8d3a19cc66631e0b');
    expect(eventId('x', 'café', '\u2603', 'a"b\\c\n')).toBe('x:a9a9b27bba67f5c01d0ab9e0aa588255');
  });
  it('skip empty parts and fall back to a random id when none remain', () => {
    expect(eventId('response', '', null, 't1', undefined, ' s1 ')).toBe(eventId('response', 't1', 's1'));
    expect(eventId('test')).toMatch(/^test:[0-9a-f-]{36}$/);
    expect(eventId('test')).not.toBe(eventId('test'));
  });
});

describe('plain text', () => {
  const cases: [string, string][] = [
    ['```ts\nconst a = 1;\n```', 'const a = 1;'],
    ['## Heading\ntext', 'Heading text'],
    ['**bold** and *em* and _it_ and ~~gone~~', 'bold and em and it and gone'],
    ['see [the docs](https://example.com/x) now', 'see the docs now'],
    ['| a | b |\n|---|:---:|\n| 1 | 2 |', 'a · b 1 · 2'],
    ['> quoted', 'quoted'],
    ['snake_case_name stays', 'snake_case_name stays'],
    ['2 * 3 * 4', '2 * 3 * 4'],
  ];
  for (const [input, output] of cases) {
    it(JSON.stringify(input), () => expect(clean(plainText(input), 500)).toBe(output));
  }
  it('cuts hard at the limit, by code point', () => {
    expect(clean('a'.repeat(600), 500)).toHaveLength(500);
    expect(clean('😀'.repeat(3), 2)).toBe('😀😀');
  });
});

describe('cron runs and reply sources', () => {
  it('find the job by task id or classic session id', () => {
    expect(cronJobId('cron:abc:123', undefined)).toBe('abc');
    expect(cronJobId(undefined, 'cron_a1b2_20260101_120000')).toBe('a1b2');
    expect(cronJobId('task-1', 'sess-1')).toBeNull();
  });
  it('place turns by platform', () => {
    expect(replySourceOf('cli')).toBe('terminal');
    expect(replySourceOf('telegram')).toBe('messaging');
    expect(replySourceOf('api_server')).toBeNull();
    expect(replySourceOf(undefined)).toBeNull();
  });
});

describe('clarify requests', () => {
  it('a one-entry questions[] call is batch protocol; qids kept or given q<i>; at most 8 × 8', () => {
    const one = normaliseClarify({ questions: [{ question: 'Which?', choices: ['a', 'b', 'a'] }] });
    expect(one).toEqual({ batch: true, questions: [{ qid: 'q0', question: 'Which?', choices: ['a', 'b'] }] });
    const many = normaliseClarify({
      questions: Array.from({ length: 10 }, (_, i) => ({
        qid: i === 1 ? '__proto__' : `k${i}`,
        question: `Q${i}`,
        choices: Array.from({ length: 10 }, (_, j) => `c${j}`),
        multi_select: i === 2 ? true : 'yes',
      })),
    });
    expect(many?.questions).toHaveLength(8);
    expect(many?.questions[1]?.qid).toBe('q1');
    expect(many?.questions[0]?.choices).toHaveLength(8);
    expect(many?.questions[2]?.multi_select).toBe(true);
    expect(many?.questions[3]?.multi_select).toBeUndefined();
    const decision = clarifyDecision('conduit-push-abc', one!);
    expect(decision).toEqual({
      kind: 'clarify',
      request_id: 'conduit-push-abc',
      question: 'Which?',
      choices: ['a', 'b'],
      questions: [{ qid: 'q0', question: 'Which?', choices: ['a', 'b'] }],
    });
  });
  it('a scalar call stays scalar (no questions[] on the card)', () => {
    const scalar = normaliseClarify({ question: 'Go?', choices: ['yes', 'no'] });
    expect(scalar?.batch).toBe(false);
    expect(clarifyDecision('conduit-push-1', scalar!).questions).toBeUndefined();
    expect(normaliseClarify({})).toBeNull();
    expect(clarificationText({})).toBe('Hermes needs your response before it can continue.');
  });
});
