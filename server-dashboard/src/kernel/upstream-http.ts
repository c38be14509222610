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
    return { status: response.status, text: await response.text() };
  } catch {
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
