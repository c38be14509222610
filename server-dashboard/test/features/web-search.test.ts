import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { memoryLogger } from '../../src/log.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import {
  firecrawlSearch,
  ProviderStandIn,
  searxngSearch,
  tavilySearch,
  type StandInHit,
} from '../support/provider-stand-ins.js';

const TAVILY_KEY = 'tvly-test-key-0123456789abcdef';
const FIRECRAWL_KEY = 'fc-test-key-0123456789abcdef';
const PREFIX = '/api/plugins/conduit_push';

const HITS: StandInHit[] = [
  { url: 'https://example.org/weather', title: 'Weather   in\nParis', text: 'Sunny, 21 °C.' },
  { url: 'ftp://example.org/file', title: 'Not a web page', text: 'dropped' },
  { url: 'https://example.org/news', title: 'T'.repeat(250), text: 'S'.repeat(600) },
  { url: `https://example.org/${'x'.repeat(2000)}`, title: 'Too long a URL', text: 'dropped' },
  { url: 'http://example.org/3', title: 'Three', text: 'three' },
  { url: 'http://example.org/4', title: 'Four', text: 'four' },
  { url: 'http://example.org/5', title: 'Five', text: 'five' },
  { url: 'http://example.org/6', title: 'Six', text: 'six' },
  { url: 'http://example.org/7', title: 'Seven', text: 'seven' },
];

const home = tempHermesHome();
const searxng = new ProviderStandIn(searxngSearch(HITS));
const tavily = new ProviderStandIn(tavilySearch(TAVILY_KEY, HITS));
const firecrawl = new ProviderStandIn(firecrawlSearch(FIRECRAWL_KEY, HITS));
const clock = new ManualClock();
const timers = new ManualTimers();
const log = memoryLogger();
const answered: string[] = [];
let host: Host & { url: string };

function profile(name: string, env: string, config = ''): void {
  const dir = path.join(home.root, 'profiles', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, '.env'), env);
  if (config) writeFileSync(path.join(dir, 'config.yaml'), config);
}

async function call(
  method: 'GET' | 'POST',
  route: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(host.url + PREFIX + route, {
    method,
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  answered.push(text);
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown> };
}

beforeAll(async () => {
  await Promise.all([searxng.start(), tavily.start(), firecrawl.start()]);
  // The root profile has nothing configured; each named profile one backend, as `hermes tools` leaves it.
  profile('sx', `SEARXNG_URL=${searxng.url}/\n`, 'web:\n  backend: searxng\n');
  profile('tv', `TAVILY_API_KEY=${TAVILY_KEY}\n`);
  profile('fc', `FIRECRAWL_API_KEY=${FIRECRAWL_KEY}\n`, 'web:\n  backend: firecrawl\n');
  profile('both', `TAVILY_API_KEY=${TAVILY_KEY}\nSEARXNG_URL=${searxng.url}\n`, 'web:\n  search_backend: searxng\n');
  profile('nokey', '', 'web:\n  backend: tavily\n');
  profile('exa', 'EXA_API_KEY=exa-key\n', 'web:\n  backend: exa\n');
  profile('sxauth', `SEARXNG_URL=${searxng.url.replace('http://', 'http://ada:s%40cret@')}\n`);
  // A self-hosted Firecrawl needs no key (FIRECRAWL_API_URL alone selects it).
  profile('fcself', `FIRECRAWL_API_URL=${firecrawl.url}\n`);
  host = await startHost(
    testConfig(home.root, { clock, timers, log, upstreams: { tavily: tavily.url, firecrawl: firecrawl.url } }),
  );
});
afterAll(async () => {
  await host.app.close();
  await Promise.all([searxng.stop(), tavily.stop(), firecrawl.stop()]);
  home.cleanup();
});
beforeEach(() => clock.advance(60_000));

describe('GET /web-search/status', () => {
  it('names the backend Hermes would search with, or why there is none', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['', { ok: true, available: false, reason: 'not_configured' }],
      ['sx', { ok: true, available: true, backend: 'searxng' }],
      ['tv', { ok: true, available: true, backend: 'tavily' }],
      ['fc', { ok: true, available: true, backend: 'firecrawl' }],
      ['both', { ok: true, available: true, backend: 'searxng' }],
      ['exa', { ok: true, available: false, reason: 'unsupported', backend: 'exa' }],
    ];
    for (const [name, expected] of cases) {
      const { status, body } = await call('GET', `/web-search/status${name ? `?profile=${name}` : ''}`);
      expect([name, status, body]).toEqual([name, 200, expected]);
    }
  });

  it('answers 503 for a profile that cannot be resolved', async () => {
    expect((await call('GET', '/web-search/status?profile=ghost')).status).toBe(503);
  });
});

describe('POST /web-search', () => {
  it('searches SearXNG with format=json and keeps http(s) results, clipped, up to the limit', async () => {
    const sent = searxng.nextCall();
    const { status, body } = await call('POST', '/web-search?profile=sx', {
      query: '  weather\n in   Paris ',
      limit: 4,
    });
    expect(status).toBe(200);
    const upstream = new URL((await sent).url, 'http://x');
    expect([upstream.pathname, upstream.searchParams.get('q'), upstream.searchParams.get('format')]).toEqual([
      '/search',
      'weather in Paris',
      'json',
    ]);
    expect(body.query).toBe('weather in Paris');
    expect(body.results).toEqual([
      { title: 'Weather in Paris', url: 'https://example.org/weather', snippet: 'Sunny, 21 °C.' },
      { title: 'T'.repeat(199) + '…', url: 'https://example.org/news', snippet: 'S'.repeat(499) + '…' },
    ]);
  });

  it('sends Tavily its bearer key and max_results, and maps content to snippets', async () => {
    const sent = tavily.nextCall();
    const { status, body } = await call('POST', '/web-search?profile=tv', { query: 'news' });
    const upstream = await sent;
    expect(status).toBe(200);
    expect(upstream.headers.authorization).toBe(`Bearer ${TAVILY_KEY}`);
    expect(upstream.body).toMatchObject({ query: 'news', max_results: 3 });
    expect((body.results as unknown[]).length).toBe(2);
  });

  it('asks Firecrawl v2 with a limit clamped to 5 and answers at most 5 results', async () => {
    const sent = firecrawl.nextCall();
    const { status, body } = await call('POST', '/web-search?profile=fc', { query: 'facts', limit: 50 });
    const upstream = await sent;
    expect(status).toBe(200);
    expect(upstream.headers.authorization).toBe(`Bearer ${FIRECRAWL_KEY}`);
    expect(upstream.body).toEqual({ query: 'facts', limit: 5 });
    // Five asked for; two of those five are not web URLs of at most 2000 characters.
    expect((body.results as { url: string }[]).map((result) => result.url)).toEqual([
      'https://example.org/weather',
      'https://example.org/news',
      'http://example.org/3',
    ]);
  });

  it('sends credentials of SEARXNG_URL as Basic auth, never in the URL', async () => {
    const sent = searxng.nextCall();
    expect((await call('POST', '/web-search?profile=sxauth', { query: 'private instance' })).status).toBe(200);
    const upstream = await sent;
    expect(upstream.headers.authorization).toBe(`Basic ${Buffer.from('ada:s@cret').toString('base64')}`);
    expect(upstream.url).not.toContain('ada');
  });

  it('reaches a self-hosted Firecrawl at FIRECRAWL_API_URL without a key', async () => {
    firecrawl.answer = (upstream) =>
      upstream.headers.authorization === undefined
        ? {
            status: 200,
            body: { success: true, data: [{ url: 'https://self.example/', title: 'Self', description: 'v1 shape' }] },
          }
        : { status: 401, body: { success: false, error: 'unexpected key' } };
    try {
      expect(await call('POST', '/web-search?profile=fcself', { query: 'q' })).toEqual({
        status: 200,
        body: { ok: true, query: 'q', results: [{ title: 'Self', url: 'https://self.example/', snippet: 'v1 shape' }] },
      });
    } finally {
      firecrawl.answer = firecrawlSearch(FIRECRAWL_KEY, HITS);
    }
  });

  it('treats a limit below 1 as 1 and anything but an integer as 3', async () => {
    const first = tavily.nextCall();
    await call('POST', '/web-search?profile=tv', { query: 'a', limit: 0 });
    expect((await first).body).toMatchObject({ max_results: 1 });
    const second = tavily.nextCall();
    await call('POST', '/web-search?profile=tv', { query: 'a', limit: '4' });
    expect((await second).body).toMatchObject({ max_results: 3 });
  });

  it('refuses a missing, empty or over-long query, and a body that is not JSON', async () => {
    const cases: [unknown, number, string][] = [
      [{}, 400, 'query is required'],
      [{ query: ' \n\t ' }, 400, 'query is required'],
      [{ query: 42 }, 400, 'query is required'],
      [{ query: 'q'.repeat(501) }, 400, 'query is longer than 500 characters'],
      [{ query: ' '.repeat(2001) + 'q' }, 400, 'query is longer than 500 characters'],
      ['{not json', 400, 'Request body is not JSON'],
    ];
    for (const [body, status, detail] of cases) {
      expect(await call('POST', '/web-search?profile=sx', body)).toEqual({ status, body: { detail } });
    }
    // Whitespace collapses before the 500-character bound.
    expect((await call('POST', '/web-search?profile=sx', { query: 'a   '.repeat(200) })).status).toBe(200);
    expect((await call('POST', '/web-search?profile=sx', { query: 'q'.repeat(20_000) })).status).toBe(413);
  });

  it('caps searches at 30 a minute per profile', async () => {
    for (let i = 0; i < 30; i += 1)
      expect((await call('POST', '/web-search?profile=sx', { query: `q${i}` })).status).toBe(200);
    expect(await call('POST', '/web-search?profile=sx', { query: 'one more' })).toEqual({
      status: 429,
      body: { detail: 'Too many web searches; try again shortly' },
    });
    expect((await call('POST', '/web-search?profile=tv', { query: 'other profile' })).status).toBe(200);
  });

  it("passes Hermes' configuration messages through and keeps the backend's own text out", async () => {
    expect(await call('POST', '/web-search', { query: 'x' })).toEqual({
      status: 502,
      body: { detail: 'No web search provider configured' },
    });
    expect(await call('POST', '/web-search?profile=nokey', { query: 'x' })).toEqual({
      status: 502,
      body: { detail: 'TAVILY_API_KEY is not set' },
    });
    tavily.answer = () => ({ status: 500, body: { detail: `internal error at ${tavily.url} key ${TAVILY_KEY}` } });
    try {
      expect(await call('POST', '/web-search?profile=tv', { query: 'x' })).toEqual({
        status: 502,
        body: { detail: 'The web search backend failed; the Hermes log has the details' },
      });
      tavily.answer = () => ({ status: 200, body: '<html>not json</html>' });
      expect(await call('POST', '/web-search?profile=tv', { query: 'x' })).toEqual({
        status: 502,
        body: { detail: 'The web search backend returned an unreadable response' },
      });
    } finally {
      tavily.answer = tavilySearch(TAVILY_KEY, HITS);
    }
  });

  it('answers 504 once a search has run 20 s, while other searches go on', async () => {
    let release: () => void = () => undefined;
    searxng.answer = () =>
      new Promise((resolve) => {
        release = () => resolve({ status: 200, body: { results: [] } });
      });
    try {
      const arrived = searxng.nextCall();
      const pending = call('POST', '/web-search?profile=sx', { query: 'slow' });
      await arrived;
      await timers.untilWaiting(2);
      timers.advance(19_999);
      expect((await call('POST', '/web-search?profile=tv', { query: 'meanwhile' })).status).toBe(200);
      timers.advance(1);
      expect(await pending).toEqual({ status: 504, body: { detail: 'Web search timed out' } });
    } finally {
      release();
      searxng.answer = searxngSearch(HITS);
    }
  });

  it('never puts a key or a query in a log line, nor a key in a response body', () => {
    expect(log.lines.some((line) => line.includes('web search answered'))).toBe(true);
    for (const line of log.lines) {
      expect(line).not.toContain('weather');
      expect(line).not.toContain(searxng.url);
    }
    for (const text of [...answered, ...log.lines]) {
      expect(text).not.toContain(TAVILY_KEY);
      expect(text).not.toContain(FIRECRAWL_KEY);
    }
  });
});
