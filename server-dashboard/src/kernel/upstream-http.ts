import type { Timers } from './timers.js';

/** The upstream did not answer within its deadline. */
export class UpstreamTimeout extends Error {
  constructor() {
    super('upstream timed out');
    this.name = 'UpstreamTimeout';
  }
}

/** The upstream could not be reached (DNS, refused, reset, TLS); the cause is never carried into a reply. */
export class UpstreamUnreachable extends Error {
  constructor() {
    super('upstream unreachable');
    this.name = 'UpstreamUnreachable';
  }
}

/** What came back: the status and the whole body as text (read within the same deadline). */
export interface UpstreamAnswer {
  status: number;
  text: string;
}

/** The upstream's answer was larger than the caller reads: treated as an unreadable answer. */
export class UpstreamTooLarge extends Error {
  constructor() {
    super('upstream answer too large');
    this.name = 'UpstreamTooLarge';
  }
}

/**
 * The largest answer read from a provider. Token and search answers are a few KiB; a larger one is
 * not the documented answer, and reading it whole would let a broken upstream fill the memory.
 */
const ANSWER_MAX_BYTES = 2 * 1024 * 1024;

/**
 * A response body as text, read only up to `maxBytes`: null (and the rest of the body left unread) when
 * it is declared or turns out larger, so a broken upstream cannot fill the memory.
 */
export async function readAtMost(response: Response, maxBytes: number): Promise<string | null> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    return null;
  }
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function readBounded(response: Response): Promise<string> {
  const text = await readAtMost(response, ANSWER_MAX_BYTES);
  if (text === null) throw new UpstreamTooLarge();
  return text;
}

export interface UpstreamRequest {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A JSON body, serialised here. */
  json?: unknown;
  timeoutMs: number;
}

/**
 * One HTTP exchange with a provider (fetch, i.e. undici): never follows a redirect (a 3xx comes back
 * as an answer, so a credential header is never replayed to another origin), and the deadline covers
 * the headers and the body together. Nothing here logs: the caller decides what, of a failure, may
 * be said, because URLs and answers of providers can carry keys.
 */
export async function upstreamExchange(url: string, request: UpstreamRequest, timers: Timers): Promise<UpstreamAnswer> {
  const abort = new AbortController();
  let timedOut = false;
  const cancel = timers.after(request.timeoutMs, () => {
    timedOut = true;
    abort.abort();
  });
  try {
    const response = await fetch(url, {
      method: request.method,
      redirect: 'manual',
      signal: abort.signal,
      headers: {
        accept: 'application/json',
        ...(request.json !== undefined ? { 'content-type': 'application/json' } : {}),
        ...request.headers,
      },
      ...(request.json !== undefined ? { body: JSON.stringify(request.json) } : {}),
    });
    return { status: response.status, text: await readBounded(response) };
  } catch (error) {
    if (error instanceof UpstreamTooLarge) throw error;
    throw timedOut ? new UpstreamTimeout() : new UpstreamUnreachable();
  } finally {
    cancel();
  }
}

/** The JSON value of a text, or undefined when it does not parse. */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
