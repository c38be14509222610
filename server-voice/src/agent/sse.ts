/** One Server-Sent Events frame: its `event` name (default `message`) and joined `data` lines. */
export interface SseFrame {
  event: string;
  data: string;
}

/**
 * Parses an SSE byte stream (text/event-stream) into frames; comments and `id:`/`retry:` lines are skipped.
 * Once `signal` aborts it stops without yielding frames still buffered, so callers never act on a cancelled turn.
 */
export async function* readSse(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const abort = () => void reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', abort, { once: true });
  let buffer = '';
  let event = 'message';
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r\n|\n|\r/)) >= 0) {
        // A CR at the very end may be the first half of a CRLF split across chunks: wait for the next byte.
        if (newline === buffer.length - 1 && buffer.endsWith('\r')) break;
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (signal?.aborted) return;
          if (data.length > 0) yield { event, data: data.join('\n') };
          event = 'message';
          data = [];
        } else if (line.startsWith(':')) {
          continue;
        } else {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'event') event = value;
          else if (field === 'data') data.push(value);
        }
      }
    }
    if (signal?.aborted) return;
    if (data.length > 0) yield { event, data: data.join('\n') };
  } finally {
    signal?.removeEventListener('abort', abort);
    reader.releaseLock();
  }
}
