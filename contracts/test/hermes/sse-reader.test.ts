import { describe, expect, it } from 'vitest';
import { readSse, SseParser, type SseEvent } from '../../src/hermes/sse-reader.js';

const bytes = (text: string) => new TextEncoder().encode(text);

/** Every event the parser dispatches when `input` arrives in the given chunks. */
function parse(chunks: Uint8Array[]): { events: SseEvent[]; retryMs: number | undefined } {
  const parser = new SseParser();
  const events = chunks.flatMap((chunk) => parser.push(chunk));
  return { events, retryMs: parser.retryMs };
}

const event = (data: string, type = 'message', lastEventId = ''): SseEvent => ({ type, data, lastEventId });

/**
 * A stream with every feature: a BOM, comments, CRLF, LF and lone-CR line endings, multi-line data, a
 * named event, ids (kept across events, one with NUL ignored), retry, unknown fields, a field without a
 * colon, an event with no data (not dispatched), non-ASCII text and an unfinished last event.
 */
const STREAM =
  '\uFEFF: keepalive\r\n' +
  'data: {"event":"message.delta","delta":"hé"}\r\n\r\n' +
  'data: crlf one\r\ndata: crlf two\r\n\r\n' +
  'data: first line\n' +
  'data:second line\n' +
  'data:  two spaces\n\n' +
  'event: run.completed\r' +
  'id: 7\r' +
  'data: {"output":"ok"}\r\r' +
  ': stream closed\n' +
  'event: ignored-without-data\n\n' +
  'retry: 2500\n' +
  'retry: soon\n' +
  'id: bad\u0000id\n' +
  'unknown: field\n' +
  'data\n\n' +
  'data: 日本語 ✓\n\n' +
  'data: never finished\n';

const EXPECTED: SseEvent[] = [
  event('{"event":"message.delta","delta":"hé"}'),
  event('crlf one\ncrlf two'),
  event('first line\nsecond line\n two spaces'),
  event('{"output":"ok"}', 'run.completed', '7'),
  event('', 'message', '7'),
  event('日本語 ✓', 'message', '7'),
];

describe('the SSE reader', () => {
  it('reads every field the standard defines', () => {
    expect(parse([bytes(STREAM)])).toEqual({ events: EXPECTED, retryMs: 2500 });
  });

  it('gives the same events however the bytes are split in two, at every byte position', () => {
    const all = bytes(STREAM);
    for (let at = 0; at <= all.length; at++) {
      expect([at, parse([all.slice(0, at), all.slice(at)]).events]).toEqual([at, EXPECTED]);
    }
  });

  it('gives the same events fed one byte at a time (CR and LF of one CRLF in separate chunks)', () => {
    const all = bytes(STREAM);
    const single = Array.from(all, (byte) => Uint8Array.of(byte));
    expect(parse(single).events).toEqual(EXPECTED);
  });

  it('gives the same events split at every pair of positions', () => {
    const all = bytes('data: a\r\ndata: b\r\n\r\nevent: e\rdata: c\r\rdata: d\n: x\ndata: e\n\n');
    const expected = [event('a\nb'), event('c', 'e'), event('d\ne')];
    for (let i = 0; i <= all.length; i++) {
      for (let j = i; j <= all.length; j++) {
        expect([i, j, parse([all.slice(0, i), all.slice(i, j), all.slice(j)]).events]).toEqual([i, j, expected]);
      }
    }
  });

  it('a CR at the end of a chunk and an LF at the start of the next end one line, not two', () => {
    // Were the LF a second line ending, `data: x` would be dispatched at once as its own event.
    expect(parse([bytes('data: x\r'), bytes('\ndata: y\r\n\r\n')]).events).toEqual([event('x\ny')]);
  });

  it('a lone CR followed by a chunk that starts with another line is still a line ending', () => {
    expect(parse([bytes('data: x\r'), bytes('data: y\r'), bytes('\r')]).events).toEqual([event('x\ny')]);
  });

  it('comments, including keepalives, never dispatch and never reset a pending event', () => {
    expect(parse([bytes('data: a\n: keepalive\n:\ndata: b\n\n')]).events).toEqual([event('a\nb')]);
  });

  it('an empty line without data dispatches nothing, and a named event without data resets its name', () => {
    expect(parse([bytes('\n\n\nevent: named\n\ndata: plain\n\n')]).events).toEqual([event('plain')]);
  });

  it('only one space after the colon is removed', () => {
    expect(parse([bytes('data:   three\n\n')]).events).toEqual([event('  three')]);
  });

  it('a UTF-8 character split across chunks is decoded whole', () => {
    const all = bytes('data: ✓\n\n');
    const at = all.indexOf(0xe2) + 1; // inside the three bytes of ✓
    expect(parse([all.slice(0, at), all.slice(at)]).events).toEqual([event('✓')]);
  });

  it('readSse yields the events of a body and drops an unfinished last one', async () => {
    const body = streamOf(['data: one\n', '\ndata: two\n\n', 'data: unfinished']);
    const seen: SseEvent[] = [];
    for await (const e of readSse(body)) seen.push(e);
    expect(seen).toEqual([event('one'), event('two')]);
  });

  it('readSse cancels the body when the reader stops early, releasing the connection', async () => {
    const body = openBody('data: one\n\ndata: two\n\n');
    for await (const e of readSse(body.stream)) {
      expect(e.data).toBe('one');
      break;
    }
    expect(body.cancelled).toBe(true);
  });

  it('readSse reads a body fed one character at a time: comments, CRLF, a named event, multi-line data', async () => {
    const text = ': hi\r\nevent: a\r\ndata: 1\r\ndata: 2\r\n\r\ndata: {"x":1}\n\n';
    const seen: SseEvent[] = [];
    for await (const e of readSse(streamOf([...text]))) seen.push(e);
    expect(seen).toEqual([event('1\n2', 'a'), event('{"x":1}')]);
  });

  it('readSse stops at an abort without yielding events already received, and cancels the body', async () => {
    const body = openBody('data: 1\n\ndata: 2\n\ndata: 3');
    const controller = new AbortController();
    const seen: string[] = [];
    for await (const e of readSse(body.stream, { signal: controller.signal })) {
      seen.push(e.data);
      controller.abort();
    }
    expect(seen).toEqual(['1']);
    expect(body.cancelled).toBe(true);
  });

  it('readSse ends when the signal aborts while it waits for bytes', async () => {
    const body = openBody('data: one\n\n');
    const controller = new AbortController();
    const seen: string[] = [];
    for await (const e of readSse(body.stream, { signal: controller.signal })) {
      seen.push(e.data);
      // Nothing more arrives: only the abort ends the wait for the next chunk.
      setImmediate(() => controller.abort());
    }
    expect(seen).toEqual(['one']);
    expect(body.cancelled).toBe(true);
  });

  it('readSse with a signal already aborted yields nothing and cancels the body', async () => {
    const body = openBody('data: one\n\n');
    const seen: SseEvent[] = [];
    for await (const e of readSse(body.stream, { signal: AbortSignal.abort() })) seen.push(e);
    expect(seen).toEqual([]);
    expect(body.cancelled).toBe(true);
  });
});

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(bytes(chunk));
      controller.close();
    },
  });
}

/** A body that has sent `text` and stays open, noting whether its reader cancelled it. */
function openBody(text: string): { stream: ReadableStream<Uint8Array>; cancelled: boolean } {
  const body = {
    cancelled: false,
    stream: new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes(text));
      },
      cancel() {
        body.cancelled = true;
      },
    }),
  };
  return body;
}
