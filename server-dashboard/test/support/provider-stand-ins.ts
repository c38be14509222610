import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { LoopbackDouble } from './loopback-server.js';

/** One request a stand-in received, reported as it arrives so a test waits on it instead of sleeping. */
export interface ProviderCall {
  method: string;
  /** Path and query as sent. */
  url: string;
  headers: http.IncomingHttpHeaders;
  /** The JSON body (undefined for none, or text that is not JSON). */
  body: unknown;
}

export interface ProviderAnswer {
  status: number;
  body: unknown;
}

/** How a stand-in answers a call: at once, or after the test releases it (a provider that hangs). */
export type Answerer = (call: ProviderCall) => ProviderAnswer | Promise<ProviderAnswer>;

/**
 * A provider's HTTP API on loopback: a real server that decodes each request, reports it (`calls`,
 * `nextCall()`), and answers with what the given answerer says for that provider's wire format.
 */
export class ProviderStandIn extends LoopbackDouble {
  readonly calls: ProviderCall[] = [];
  private readonly waiting: ((call: ProviderCall) => void)[] = [];

  constructor(public answer: Answerer) {
    super();
  }

  /** Resolves with the next call this stand-in receives (or the first not yet taken). */
  nextCall(): Promise<ProviderCall> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = text ? (JSON.parse(text) as unknown) : undefined;
    } catch {
      body = undefined;
    }
    const call: ProviderCall = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
    this.calls.push(call);
    this.waiting.shift()?.(call);
    const answer = await this.answer(call);
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
  }
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Google's error envelope (`google.rpc.Status` as JSON). */
function googleError(code: number, status: string, message: string): ProviderAnswer {
  return { status: code, body: { error: { code, message, status } } };
}

const RFC3339_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/**
 * Google's `POST /{version}/auth_tokens` (Gemini API ephemeral tokens): the key in `x-goog-api-key`,
 * an AuthToken body (`uses`, `expireTime`, `newSessionExpireTime`, `bidiGenerateContentSetup`,
 * `fieldMask`), answered with the created token's resource `name` (`auth_tokens/…`). A wrong key gets
 * Google's 400 INVALID_ARGUMENT "API key not valid"; a malformed body 400 as well.
 */
export function googleAuthTokens(...apiKeys: string[]): Answerer {
  return (call) => {
    if (call.method !== 'POST' || !/^\/v1(alpha|beta)?\/auth_tokens$/.test(call.url)) {
      return googleError(404, 'NOT_FOUND', 'Requested entity was not found.');
    }
    const key = call.headers['x-goog-api-key'];
    if (typeof key !== 'string' || !apiKeys.includes(key)) {
      return googleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.');
    }
    const body = record(call.body);
    const setup = record(body.bidiGenerateContentSetup);
    const wellFormed =
      Number.isInteger(body.uses) &&
      typeof body.expireTime === 'string' &&
      RFC3339_SECONDS.test(body.expireTime) &&
      typeof body.newSessionExpireTime === 'string' &&
      RFC3339_SECONDS.test(body.newSessionExpireTime) &&
      typeof setup.model === 'string' &&
      setup.model.startsWith('models/');
    if (!wellFormed) return googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
    return { status: 200, body: { name: `auth_tokens/${randomBytes(12).toString('hex')}` } };
  };
}

/** A search hit in the shape each backend's API answers with. */
export interface StandInHit {
  url: string;
  title: string;
  text: string;
}

/** SearXNG's `GET /search?q=…&format=json` → `{query, results: [{url, title, content, engine}]}`. */
export function searxngSearch(hits: StandInHit[]): Answerer {
  return (call) => {
    const url = new URL(call.url, 'http://stand-in');
    if (call.method !== 'GET' || url.pathname !== '/search') return { status: 404, body: 'Not Found' };
    // SearXNG answers 403 to a format its settings do not enable.
    if (url.searchParams.get('format') !== 'json') return { status: 403, body: 'Forbidden' };
    return {
      status: 200,
      body: {
        query: url.searchParams.get('q'),
        number_of_results: hits.length,
        results: hits.map((hit) => ({ url: hit.url, title: hit.title, content: hit.text, engine: 'stand-in' })),
      },
    };
  };
}

/** Tavily's `POST /search` with `Authorization: Bearer tvly-…` → `{query, results: [{title, url, content, score}]}`. */
export function tavilySearch(apiKey: string, hits: StandInHit[]): Answerer {
  return (call) => {
    if (call.method !== 'POST' || call.url !== '/search') return { status: 404, body: { detail: 'Not Found' } };
    if (call.headers.authorization !== `Bearer ${apiKey}`) {
      return { status: 401, body: { detail: { error: 'Unauthorized: missing or invalid API key.' } } };
    }
    const body = record(call.body);
    const max = typeof body.max_results === 'number' ? body.max_results : 5;
    return {
      status: 200,
      body: {
        query: body.query,
        results: hits.slice(0, max).map((hit) => ({ title: hit.title, url: hit.url, content: hit.text, score: 0.9 })),
        response_time: 0.1,
      },
    };
  };
}

/** Firecrawl's `POST /v2/search` with a bearer key → `{success: true, data: {web: [{url, title, description}]}}`. */
export function firecrawlSearch(apiKey: string, hits: StandInHit[]): Answerer {
  return (call) => {
    if (call.method !== 'POST' || call.url !== '/v2/search')
      return { status: 404, body: { success: false, error: 'Not Found' } };
    if (call.headers.authorization !== `Bearer ${apiKey}`) {
      return { status: 401, body: { success: false, error: 'Unauthorized: Invalid token' } };
    }
    const body = record(call.body);
    const limit = typeof body.limit === 'number' ? body.limit : 5;
    return {
      status: 200,
      body: {
        success: true,
        data: { web: hits.slice(0, limit).map((hit) => ({ url: hit.url, title: hit.title, description: hit.text })) },
      },
    };
  };
}
