import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { artifactsFeature } from '../../src/features/artifacts/index.js';
import { mentionsOf, type StoredMessage } from '../../src/features/artifacts/message-artifacts.js';
import { createHermesArtifactsDb, type FixtureMessage } from '../fixtures/hermes-artifacts-db.js';
import { createHermesStateDb } from '../fixtures/hermes-state-db.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

const PREFIX = '/api/plugins/conduit_push';

const home = tempHermesHome();
const clock = new ManualClock();
const files = path.join(home.root, 'work-files');
let host: Host & { url: string };

function profileHome(name: string): string {
  const dir = name === 'default' ? home.root : path.join(home.root, 'profiles', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function file(relative: string, bytes: number): string {
  const at = path.join(files, relative);
  mkdirSync(path.dirname(at), { recursive: true });
  writeFileSync(at, 'x'.repeat(bytes));
  return at;
}

type Item = Record<string, unknown>;
type Page = { ok: true; items: Item[]; next_before: number | null };

async function get(query: string): Promise<{ status: number; body: Record<string, unknown>; cache: string | null }> {
  const response = await fetch(`${host.url}${PREFIX}/artifacts${query}`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    cache: response.headers.get('cache-control'),
  };
}

async function page(query: string): Promise<Page> {
  const { status, body } = await get(query);
  expect([status, body]).toEqual([200, expect.objectContaining({ ok: true })]);
  return body as Page;
}

/** Every page from the newest to the start, as the app pages with next_before. */
async function allPages(query: string): Promise<Page[]> {
  const pages: Page[] = [];
  let before: number | null = null;
  do {
    const next = await page(`${query}${before === null ? '' : `&before=${before}`}`);
    pages.push(next);
    before = next.next_before;
  } while (before !== null && pages.length < 50);
  return pages;
}

const nameOf = (item: Item) => item.name;

// Default profile: one chat that produces every kind of artifact.
let chatIds: number[] = [];
// `work`: 25 replies with a link each, one URL mentioned twice.
let linkIds: number[] = [];

beforeAll(async () => {
  chatIds = createHermesArtifactsDb(path.join(profileHome('default'), 'state.db'), {
    sessions: [{ id: 's1', title: 'Quarterly report', cwd: files }],
    messages: [
      {
        session_id: 's1',
        role: 'user',
        content: `Please summarise @file:"${files}/brief notes.txt" and @file:data.csv:1-20, thanks.\n\n--- Attached Context ---\n\n📄 @file:/not/typed/by/the/user.txt (3 tokens)`,
      },
      {
        session_id: 's1',
        role: 'assistant',
        content: '',
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: { name: 'write_file', arguments: JSON.stringify({ path: 'out/chart.png', content: '…' }) },
          },
          { id: 'c2', type: 'function', function: { name: 'read_file', arguments: '{"path": "/srv/read-only.pdf"}' } },
          { id: 'c3', type: 'function', function: { name: 'write_file', arguments: '{"path": "src/app.ts"}' } },
        ],
      },
      {
        session_id: 's1',
        role: 'tool',
        tool_name: 'text_to_speech',
        tool_call_id: 'c4',
        content: JSON.stringify({
          success: true,
          file_path: `${files}/voice.ogg`,
          media_tag: `MEDIA:${files}/voice.ogg`,
        }),
      },
      {
        session_id: 's1',
        role: 'assistant',
        content: [
          'Here it is.',
          '',
          `MEDIA:${files}/report.pdf`,
          '',
          '::preview{file="dash.html" title="Sales dashboard"}',
          '',
          'See [the docs](https://docs.example.com/guide) or https://example.org/page.',
          '```',
          'MEDIA:/tmp/example-in-code.png',
          'curl https://in-code.example.com/',
          '```',
          'MEDIA:/missing/gone.mp4',
        ].join('\n'),
      },
    ],
  });
  file('report.pdf', 10);
  file('dash.html', 20);
  file('voice.ogg', 30);
  file('out/chart.png', 40);
  file('brief notes.txt', 50);
  file('data.csv', 60);

  const linkMessages: FixtureMessage[] = Array.from({ length: 25 }, (_, i) => ({
    session_id: 'w1',
    role: 'assistant',
    content: `Link https://site.example/${i}${i === 5 || i === 20 ? ' and https://dup.example/x' : ''}`,
  }));
  linkIds = createHermesArtifactsDb(path.join(profileHome('work'), 'state.db'), {
    sessions: [{ id: 'w1', title: 'Links' }],
    messages: linkMessages,
  });

  host = await startHost(testConfig(home.root, { clock }), { features: [artifactsFeature] });
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});
beforeEach(() => clock.advance(60_000));

describe('GET /artifacts: what a chat produced', () => {
  it('lists delivered, previewed, written, attached files and reply links, newest message first, with exists and size', async () => {
    const { status, body, cache } = await get('?limit=200');
    expect(status).toBe(200);
    expect(cache).toBe('no-store');
    const common = { session_id: 's1', session_title: 'Quarterly report' };
    const at = (index: number) => ({ message_id: chatIds[index], timestamp: 1_767_225_600 + index });
    expect(body).toEqual({
      ok: true,
      next_before: null,
      items: [
        {
          kind: 'document',
          source: 'delivered',
          name: 'report.pdf',
          path: `${files}/report.pdf`,
          exists: true,
          size: 10,
          ...common,
          ...at(3),
        },
        {
          kind: 'video',
          source: 'delivered',
          name: 'gone.mp4',
          path: '/missing/gone.mp4',
          exists: false,
          size: null,
          ...common,
          ...at(3),
        },
        {
          kind: 'page',
          source: 'preview',
          name: 'Sales dashboard',
          path: `${files}/dash.html`,
          exists: true,
          size: 20,
          ...common,
          ...at(3),
        },
        {
          kind: 'link',
          source: 'link',
          name: 'the docs',
          url: 'https://docs.example.com/guide',
          host: 'docs.example.com',
          ...common,
          ...at(3),
        },
        {
          kind: 'link',
          source: 'link',
          name: 'example.org/page',
          url: 'https://example.org/page',
          host: 'example.org',
          ...common,
          ...at(3),
        },
        {
          kind: 'audio',
          source: 'written',
          name: 'voice.ogg',
          path: `${files}/voice.ogg`,
          exists: true,
          size: 30,
          ...common,
          ...at(2),
        },
        {
          kind: 'image',
          source: 'written',
          name: 'chart.png',
          path: `${files}/out/chart.png`,
          exists: true,
          size: 40,
          ...common,
          ...at(1),
        },
        {
          kind: 'document',
          source: 'attached',
          name: 'brief notes.txt',
          path: `${files}/brief notes.txt`,
          exists: true,
          size: 50,
          ...common,
          ...at(0),
        },
        {
          kind: 'document',
          source: 'attached',
          name: 'data.csv',
          path: `${files}/data.csv`,
          exists: true,
          size: 60,
          ...common,
          ...at(0),
        },
      ],
    });
  });

  it('answers an empty history, not an error, for a profile without a state.db or without a messages table', async () => {
    profileHome('fresh');
    expect((await get('?profile=fresh')).body).toEqual({ ok: true, items: [], next_before: null });
    createHermesStateDb(path.join(profileHome('stripped'), 'state.db'), { without: ['messages'] });
    expect((await get('?profile=stripped')).body).toEqual({ ok: true, items: [], next_before: null });
  });

  it("answers 503 when the profile's state.db is not a database, and 503 for an unknown profile", async () => {
    writeFileSync(path.join(profileHome('broken'), 'state.db'), 'this is not sqlite, just text padding '.repeat(200));
    expect(await get('?profile=broken')).toEqual({
      status: 503,
      body: { detail: "Hermes' session store (state.db) can't be read" },
      cache: 'no-store',
    });
    expect((await get('?profile=ghost')).status).toBe(503);
  });

  it('reads an earlier schema (no cwd or active columns): relative paths are kept as written, as missing', async () => {
    createHermesArtifactsDb(path.join(profileHome('early'), 'state.db'), {
      schema: 'early',
      sessions: [{ id: 'e1', title: 'Old chat' }],
      messages: [
        { session_id: 'e1', role: 'user', content: 'look at @file:notes/plan.md' },
        { session_id: 'e1', role: 'assistant', content: `MEDIA:${files}/report.pdf` },
      ],
    });
    const { items } = await page('?profile=early');
    expect(items.map((item) => [item.source, item.path, item.exists, item.size])).toEqual([
      ['delivered', `${files}/report.pdf`, true, 10],
      ['attached', 'notes/plan.md', false, null],
    ]);
  });

  it('skips superseded rows (active = 0: an edited message, a regenerated reply)', async () => {
    createHermesArtifactsDb(path.join(profileHome('edited'), 'state.db'), {
      sessions: [{ id: 'x1' }],
      messages: [
        { session_id: 'x1', role: 'assistant', content: 'old https://old.example/', active: 0 },
        { session_id: 'x1', role: 'assistant', content: 'new https://new.example/' },
      ],
    });
    const { items } = await page('?profile=edited');
    expect(items.map((item) => [item.url, item.session_title])).toEqual([['https://new.example/', null]]);
  });
});

describe('paging with next_before', () => {
  it('pages to the start (null), listing a URL once per page at its newest mention', async () => {
    const pages = await allPages('?profile=work&limit=10');
    expect(pages.map((p) => p.items.map((item) => item.url))).toEqual([
      [
        ...[24, 23, 22, 21, 20].map((i) => `https://site.example/${i}`),
        'https://dup.example/x',
        ...[19, 18, 17, 16].map((i) => `https://site.example/${i}`),
      ],
      [15, 14, 13, 12, 11, 10, 9, 8, 7, 6].map((i) => `https://site.example/${i}`),
      // A later page lists the URL again, at its older mention.
      ['https://site.example/5', 'https://dup.example/x', ...[4, 3, 2, 1, 0].map((i) => `https://site.example/${i}`)],
    ]);
    expect(pages.map((p) => p.next_before)).toEqual([linkIds[16], linkIds[6], null]);
    expect(pages[2]?.items[1]).toMatchObject({ message_id: linkIds[5], host: 'dup.example', name: 'dup.example/x' });
  });

  it('takes a message whole or leaves it for the next page, so paging never skips an item', async () => {
    const first = await page('?profile=work&limit=5');
    expect(first.items.map((item) => item.url)).toEqual([24, 23, 22, 21].map((i) => `https://site.example/${i}`));
    expect(first.next_before).toBe(linkIds[21]);
    const second = await page(`?profile=work&limit=5&before=${first.next_before}`);
    expect(second.items.map((item) => item.url)).toEqual([
      'https://site.example/20',
      'https://dup.example/x',
      'https://site.example/19',
      'https://site.example/18',
      'https://site.example/17',
    ]);
  });

  it('reads a bounded window of messages, so a sparse history comes back as a short page with a next_before', async () => {
    const quiet: FixtureMessage[] = Array.from({ length: 2100 }, () => ({
      session_id: 'q1',
      role: 'assistant',
      content: 'Nothing to see here.',
    }));
    const ids = createHermesArtifactsDb(path.join(profileHome('sparse'), 'state.db'), {
      sessions: [{ id: 'q1', title: 'Quiet' }],
      messages: [{ session_id: 'q1', role: 'assistant', content: 'The start: https://first.example/' }, ...quiet],
    });
    const first = await page('?profile=sparse');
    // 2,000 messages read, newest first: the window ends at the 2,000th newest.
    expect(first).toEqual({ ok: true, items: [], next_before: ids[ids.length - 2000] });
    const second = await page(`?profile=sparse&before=${first.next_before}`);
    expect(second.items.map((item) => item.url)).toEqual(['https://first.example/']);
    expect(second.next_before).toBeNull();
  });

  it('answers null, not a cursor to an empty page, when the page fills on the oldest message', async () => {
    const last = await page(`?profile=work&limit=1&before=${linkIds[1]}`);
    expect(last).toMatchObject({ items: [{ url: 'https://site.example/0' }], next_before: null });
  });
});

describe('filters: session_id (with parent chains), kind, q', () => {
  beforeAll(() => {
    // A continues into B, B into C (compression); B spawned the subagent D; E is another chat.
    createHermesArtifactsDb(path.join(profileHome('family'), 'state.db'), {
      sessions: [
        { id: 'A', title: 'Trip planning' },
        { id: 'B', title: 'Trip planning #2', parent_session_id: 'A' },
        { id: 'C', title: 'Trip planning #3', parent_session_id: 'B' },
        { id: 'D', title: 'Subagent: flights', parent_session_id: 'B' },
        { id: 'E', title: 'Other chat' },
      ],
      messages: [
        { session_id: 'A', role: 'assistant', content: 'MEDIA:/trip/a-map.png' },
        { session_id: 'E', role: 'assistant', content: 'MEDIA:/elsewhere/other.png' },
        { session_id: 'B', role: 'assistant', content: 'Fares: https://flights.example/search?q=LIS' },
        { session_id: 'D', role: 'assistant', content: '::preview{url="https://preview.example/board"}' },
        { session_id: 'C', role: 'assistant', content: 'MEDIA:/trip/itinerary.pdf' },
      ],
    });
  });

  const names = async (query: string) => (await page(`?profile=family${query}`)).items.map(nameOf);

  it("reads the chat's whole lineage: the sessions it continues from and those it spawned", async () => {
    const chat = ['itinerary.pdf', 'preview.example/board', 'flights.example/search', 'a-map.png'];
    expect(await names('&session_id=C')).toEqual(chat);
    expect(await names('&session_id=A')).toEqual(chat);
    // Each id the chat is known by (its live id is not stored yet).
    expect(await names('&session_id=live-1234&session_id=C')).toEqual(chat);
    expect(await names('&session_id=E')).toEqual(['other.png']);
    expect(await names('')).toEqual([
      'itinerary.pdf',
      'preview.example/board',
      'flights.example/search',
      'other.png',
      'a-map.png',
    ]);
  });

  it('filters by kind: images, pages, files, links', async () => {
    expect(await names('&kind=images')).toEqual(['other.png', 'a-map.png']);
    expect(await names('&kind=files')).toEqual(['itinerary.pdf']);
    expect(await names('&kind=links')).toEqual(['flights.example/search']);
    const pages = await page('?profile=family&kind=pages');
    expect(pages.items).toEqual([
      expect.objectContaining({
        kind: 'page',
        source: 'preview',
        url: 'https://preview.example/board',
        host: 'preview.example',
        session_id: 'D',
        session_title: 'Subagent: flights',
      }),
    ]);
  });

  it('filters by q: every word, any case, in the name, chat title, path or URL', async () => {
    expect(await names('&q=trip')).toEqual(['itinerary.pdf', 'flights.example/search', 'a-map.png']);
    expect(await names('&q=ITINERARY%20pdf')).toEqual(['itinerary.pdf']);
    expect(await names('&q=other+chat')).toEqual(['other.png']);
    expect(await names('&q=lis')).toEqual(['flights.example/search']);
    expect(await names('&q=trip&kind=images&session_id=C')).toEqual(['a-map.png']);
    expect(await names('&q=nothing-matches')).toEqual([]);
  });
});

describe('refusals', () => {
  it('answers 400 for a limit outside 1..200, an unknown kind, a bad before or too many session ids', async () => {
    const limit = { detail: 'limit must be a whole number from 1 to 200' };
    expect((await get('?limit=0')).body).toEqual(limit);
    expect((await get('?limit=201')).body).toEqual(limit);
    expect((await get('?limit=1.5')).body).toEqual(limit);
    expect((await get('?limit=ten')).body).toEqual(limit);
    expect((await get('?limit=200')).status).toBe(200);
    expect(await get('?kind=videos')).toMatchObject({
      status: 400,
      body: { detail: 'kind must be images, pages, files or links' },
    });
    expect((await get('?before=-3')).body).toEqual({ detail: "before must be the previous page's next_before" });
    expect((await get(`?${Array.from({ length: 9 }, (_, i) => `session_id=s${i}`).join('&')}`)).body).toEqual({
      detail: "session_id must name a chat's session ids (at most 8)",
    });
    expect((await get(`?q=${'w'.repeat(201)}`)).body).toEqual({ detail: 'q is longer than 200 characters' });
    expect((await get('?limit=0')).cache).toBe('no-store');
  });

  it('caps reads at 120 a minute per profile', async () => {
    profileHome('busy');
    for (let i = 0; i < 120; i += 1) expect((await get('?profile=busy')).status).toBe(200);
    expect(await get('?profile=busy')).toEqual({
      status: 429,
      body: { detail: 'Too many artifact requests; try again shortly' },
      cache: 'no-store',
    });
    expect((await get('?profile=work&limit=1')).status).toBe(200);
  });
});

describe('reading one message', () => {
  const message = (role: string, content: string, extra: Partial<StoredMessage> = {}): StoredMessage => ({
    id: 1,
    sessionId: 's',
    role,
    content,
    toolCalls: null,
    toolName: null,
    timestamp: null,
    sessionTitle: null,
    cwd: '/work/project',
    ...extra,
  });
  const read = (m: StoredMessage) =>
    mentionsOf(m, '/home/ada').map((mention) => ('path' in mention ? mention.path : mention.url));

  it('reads MEDIA tags as Hermes does: quoted, with spaces before a known extension, ~ and file:// paths', () => {
    expect(
      read(
        message(
          'assistant',
          [
            'MEDIA:/srv/out/my report.pdf is ready',
            'MEDIA: `/srv/out/quoted name.bin`',
            'MEDIA:~/Pictures/cat.png.',
            'MEDIA:file:///srv/out/a%20b.mp3',
            'media: /not/a/tag.png',
          ].join('\n'),
        ),
      ),
    ).toEqual(['/srv/out/my report.pdf', '/srv/out/quoted name.bin', '/home/ada/Pictures/cat.png', '/srv/out/a b.mp3']);
  });

  it('reads links as chat clients do: sentence punctuation and unbalanced brackets end them', () => {
    expect(
      read(
        message(
          'assistant',
          'See (https://a.example/x), https://en.wikipedia.org/wiki/Foo_(bar). And [it](https://b.example/y_(z)) too!',
        ),
      ),
    ).toEqual(['https://b.example/y_(z)', 'https://a.example/x', 'https://en.wikipedia.org/wiki/Foo_(bar)']);
    // Links are a reply's: the user's own and a tool's output are not listed.
    expect(read(message('user', 'https://mine.example/'))).toEqual([]);
    expect(read(message('tool', 'fetched https://page.example/'))).toEqual([]);
  });

  it("reads a patch's added files and a writer tool's path arguments, documents and media only", () => {
    const toolCalls = JSON.stringify([
      {
        function: {
          name: 'patch',
          arguments: JSON.stringify({
            patch: '*** Begin Patch\n*** Add File: docs/guide.md\n+# Guide\n*** Update File: src/x.ts\n',
          }),
        },
      },
      { function: { name: 'image_generate', arguments: { output_path: '/srv/img/hero.webp' } } },
      { function: { name: 'vision_analyze', arguments: { path: '/srv/img/seen.png' } } },
    ]);
    expect(read(message('assistant', '', { toolCalls }))).toEqual([
      '/work/project/docs/guide.md',
      '/srv/img/hero.webp',
    ]);
  });

  it('reads ::preview lines alone on their line, from a file or a URL', () => {
    expect(
      read(
        message(
          'assistant',
          [
            '::preview{file="widgets/chart.html"}',
            "  ::preview{url='http://localhost:5173/' title='Dev server'}",
            'inline ::preview{file="not-alone.html"} is not a directive',
          ].join('\n'),
        ),
      ),
    ).toEqual(['/work/project/widgets/chart.html', 'http://localhost:5173/']);
  });
});
