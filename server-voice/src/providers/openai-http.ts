import { SpeechProviderError } from './types.js';

/** The `fetch` a provider uses (injected by tests and by hosts that need a proxy agent). */
export type FetchLike = typeof fetch;

/** Connection settings of an OpenAI-compatible speech endpoint. */
export interface OpenAiEndpoint {
  /** Base URL including the version prefix, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`. */
  baseUrl: string;
  /** Bearer key; omitted for local servers that need none. Never logged, never in an error message. */
  apiKey?: string;
  /** Whole-request deadline (default 60 s for speech-to-text, 30 s to first byte for speech). */
  timeoutMs?: number;
  fetch?: FetchLike;
}

/** The URL of `path` under the endpoint's base (which must be http or https). */
export function endpointUrl(baseUrl: string, path: string): URL {
  let base: URL;
  try {
    base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  } catch {
    throw new SpeechProviderError('speech endpoint base URL is not a valid URL');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:')
    throw new SpeechProviderError('speech endpoint base URL must use http or https');
  if (base.username || base.password)
    throw new SpeechProviderError('put the speech API key in its own setting, not in the URL');
  return new URL(path.replace(/^\//, ''), base);
}

export function authorization(apiKey?: string): Record<string, string> {
  return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
}

/**
 * A provider error from a non-2xx answer: the status and the upstream's own error message (OpenAI's
 * `{"error":{"message"}}`, truncated), never request headers.
 */
export async function upstreamError(what: string, response: Response, apiKey?: string): Promise<SpeechProviderError> {
  let detail = '';
  try {
    const text = (await response.text()).slice(0, 2000);
    try {
      const body = JSON.parse(text) as { error?: { message?: unknown } | string };
      const message = typeof body.error === 'string' ? body.error : body.error?.message;
      detail = typeof message === 'string' ? message : text;
    } catch {
      detail = text;
    }
  } catch {
    detail = '';
  }
  const suffix = detail.trim() ? `: ${redactKeys(detail, apiKey).trim().replace(/\s+/g, ' ').slice(0, 300)}` : '';
  return new SpeechProviderError(`${what} failed with HTTP ${response.status}${suffix}`, response.status);
}

/**
 * Upstream messages can echo credentials ("Incorrect API key provided: sk-ab***yz"): the configured key and
 * anything shaped like an API key are replaced before the text can reach an error or a log line.
 */
export function redactKeys(text: string, apiKey?: string): string {
  let out = apiKey ? text.split(apiKey).join('[redacted]') : text;
  out = out.replace(/\b(sk|pk|rk|gsk|xai)-[A-Za-z0-9*_.-]{4,}/g, '[redacted]');
  out = out.replace(/Bearer\s+\S+/gi, 'Bearer [redacted]');
  return out;
}

/** One signal that fires on the caller's abort or on the deadline. */
export function withDeadline(signal: AbortSignal | undefined, timeoutMs: number): AbortSignal {
  const deadline = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, deadline]) : deadline;
}
