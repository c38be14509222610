/**
 * Server-Sent Events (`text/event-stream`), read as the HTML standard's event-stream interpretation
 * says (WHATWG HTML, "Interpreting an event stream"): lines end in CRLF, LF or a lone CR; a line
 * starting with `:` is a comment; `data:` lines of one event are joined with LF; an empty line
 * dispatches; an event without data is not dispatched; an event the stream ends in the middle of is
 * dropped (it was never dispatched, and a cut connection could have truncated it). Bytes may be split
 * anywhere — inside a UTF-8 sequence or between the CR and LF of one line ending — so the parser keeps
 * what it has not finished between chunks.
 *
 * The suite's one SSE reader: the Hermes API client (`./api-client.ts`) and the voice gateway's
 * OpenAI-compatible chat agent read their streams through it.
 */

/** One dispatched event. */
export interface SseEvent {
  /** The `event:` field, `message` when the event named none. */
  type: string;
  /** The event's `data:` lines joined with LF (no trailing LF). */
  data: string;
  /** The last `id:` the stream set, kept across events ('' before any). */
  lastEventId: string;
}

const LF = 0x0a;
const CR = 0x0d;

/** The event-stream state machine: feed it bytes, get the events they complete. Pure, no IO. */
export class SseParser {
  // The decoder keeps a UTF-8 sequence split across chunks, and drops one leading BOM as the standard asks.
  private readonly decoder = new TextDecoder('utf-8');
  /** The unfinished last line of what was fed so far. */
  private line = '';
  /** The last character fed was a CR: an LF first in the next chunk ends no second line. */
  private afterCr = false;
  private eventType = '';
  private data = '';
  private lastEventId = '';
  /** The reconnection time a `retry:` field set, in milliseconds. */
  retryMs: number | undefined;

  /** The events these bytes complete, in order. */
  push(bytes: Uint8Array): SseEvent[] {
    return this.feed(this.decoder.decode(bytes, { stream: true }));
  }

  private feed(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    if (text.length > 0 && this.afterCr) {
      if (text.charCodeAt(0) === LF) start = 1;
      this.afterCr = false;
    }
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code !== LF && code !== CR) continue;
      const line = this.line + text.slice(start, i);
      this.line = '';
      if (code === CR) {
        if (i + 1 === text.length) this.afterCr = true;
        else if (text.charCodeAt(i + 1) === LF) i++;
      }
      start = i + 1;
      const event = this.processLine(line);
      if (event) events.push(event);
    }
    this.line += text.slice(start);
    return events;
  }

  private processLine(line: string): SseEvent | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.data += value + '\n';
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        // Unknown fields are ignored.
        break;
    }
    return null;
  }

  private dispatch(): SseEvent | null {
    const { eventType, data } = this;
    this.eventType = '';
    this.data = '';
    if (data === '') return null;
    return { type: eventType || 'message', data: data.slice(0, -1), lastEventId: this.lastEventId };
  }
}

export interface ReadSseOptions {
  /**
   * Once aborted, no further event is yielded — not even one already received — and the body is
   * cancelled, so a caller never acts on what arrives for a cancelled request.
   */
  signal?: AbortSignal;
}

/**
 * The events of an SSE response body. Stopping early (a `return` or `break` in the consumer, or the
 * signal) cancels the body, so the connection is released rather than left streaming. The stream's
 * end ends the events quietly, with an unfinished last event dropped; an aborted signal does too, so
 * a caller that cares asks its signal afterwards.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  options: ReadSseOptions = {},
): AsyncGenerator<SseEvent> {
  const { signal } = options;
  const parser = new SseParser();
  const reader = body.getReader();
  const cancel = () => void reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', cancel, { once: true });
  let finished = false;
  try {
    while (!signal?.aborted) {
      const chunk = await reader.read();
      if (chunk.done) {
        finished = true;
        return;
      }
      for (const event of parser.push(chunk.value)) {
        if (signal?.aborted) return;
        yield event;
      }
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
