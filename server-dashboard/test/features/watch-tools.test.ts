/**
 * Watch tools, host side, end to end: the real host service grants Watch tools on a real relay process
 * (server-relay), long-polls it, and answers the sealed calls a Watch stand-in makes through the
 * relay's Watch side (API.md routes 17 and 20) with its own node:crypto sealing, apart from the host's.
 * Only Tavily and Hermes' memory provider are stand-ins.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@conduit/contracts/testing';
import type { Host } from '../../src/app.js';
import { memoryFeature } from '../../src/features/memory/index.js';
import { createWatchToolsFeature, watchToolsFeature, type WatchJobs } from '../../src/features/watch/index.js';
import { webSearchFeature } from '../../src/features/web-search/index.js';
import type { LogFields, Logger } from '../../src/log.js';
import { fakeHermesPython } from '../fixtures/fake-hermes-python.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';
import { ProviderStandIn, tavilySearch, type StandInHit } from '../support/provider-stand-ins.js';
import { RealRelay, WatchStandIn, type Grant } from '../support/watch-stand-in.js';

const PREFIX = '/api/plugins/conduit_push';
const TAVILY_KEY = 'tvly-watch-test-key-0123456789';
const HITS: StandInHit[] = [
  { url: 'https://example.org/paris', title: 'Paris   weather', text: 'Sunny, 21 °C.' },
  { url: 'https://example.org/tokyo', title: 'Tokyo weather', text: 'Rain.' },
  { url: 'https://example.org/oslo', title: 'Oslo weather', text: 'Snow.' },
];

/** The host's log, reporting each line as it is written so a test waits for the event it expects. */
class ReportingLogger implements Logger {
  readonly lines: { message: string; fields: LogFields | undefined }[] = [];
  private readonly waiting: { message: string; resolve: (fields: LogFields | undefined) => void }[] = [];
  info = (message: string, fields?: LogFields) => this.write(message, fields);
  warn = (message: string, fields?: LogFields) => this.write(message, fields);
  error = (message: string, fields?: LogFields) => this.write(message, fields);

  /** Resolves with the fields of the next line with this message. */
  next(message: string): Promise<LogFields | undefined> {
    return new Promise((resolve) => this.waiting.push({ message, resolve }));
  }

  private write(message: string, fields?: LogFields): void {
    this.lines.push({ message, fields });
    const index = this.waiting.findIndex((waiter) => waiter.message === message);
    if (index >= 0) this.waiting.splice(index, 1)[0]?.resolve(fields);
  }
}

const home = tempHermesHome();
const clock = new ManualClock();
const log = new ReportingLogger();
const tavily = new ProviderStandIn(tavilySearch(TAVILY_KEY, HITS));
const oldRelay = new ProviderStandIn(() => ({ status: 404, body: { error: 'not_found' } }));
let relay: RealRelay;
let relayUrl = '';
let pythonPath = '';
let host: Host & { url: string };

// ---------------------------------------------------------------------------------------------------
// The host's routes and the phone's pairing.

async function hostCall(
  route: string,
  body: unknown,
  url = host.url,
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(url + PREFIX + route, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

async function grantFor(
  profile: string,
  body: Record<string, unknown> = { tools: ['web_search', 'recall_memory'] },
  url = host.url,
) {
  const answer = await hostCall(`/watch-tools/grant?profile=${profile}`, body, url);
  if (answer.status !== 200) throw new Error(`grant ${answer.status} ${JSON.stringify(answer.body)}`);
  return new WatchStandIn(answer.body as unknown as Grant);
}

function profileDir(name: string, files: Record<string, string> = {}): string {
  const dir = path.join(home.root, 'profiles', name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
  return dir;
}

/** Pairs a profile with the real relay as `conduit push pair` does. */
async function pairProfile(name: string, files: Record<string, string>): Promise<void> {
  await relay.pair(profileDir(name, files));
}

const SEARCHING = { '.env': `TAVILY_API_KEY=${TAVILY_KEY}\n`, 'config.yaml': 'memory:\n  provider: honcho\n' };

beforeAll(async () => {
  await Promise.all([tavily.start(), oldRelay.start()]);
  pythonPath = fakeHermesPython(home.root).python;
  relay = await RealRelay.start(home.root);
  relayUrl = relay.url;
  for (const name of ['watch', 'other', 'window', 'grants', 'expiry', 'forged', 'closing']) {
    await pairProfile(name, SEARCHING);
  }
  profileDir('unpaired', SEARCHING);
  writePairing(profileDir('plainhttp', SEARCHING), 'http://relay.example');
  writePairing(profileDir('oldrelay', SEARCHING), oldRelay.url);
  writePairing(profileDir('offline', SEARCHING), `http://127.0.0.1:${await freePort()}`);
  host = await startHost(
    testConfig(home.root, {
      clock,
      log,
      serviceEnv: { CONDUIT_HERMES_PYTHON: pythonPath },
      upstreams: { tavily: tavily.url },
    }),
    { features: [webSearchFeature, memoryFeature, watchToolsFeature] },
  );
}, 120_000);

afterAll(async () => {
  await host?.app.close();
  await relay?.stop();
  await Promise.all([tavily.stop(), oldRelay.stop()]);
  await rm(home.root, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------

describe('a Watch call through the real relay', () => {
  it('grants lookups, answers sealed web_search and recall_memory as the Live Voice routes do, and revoke closes it', async () => {
    const granted = await hostCall('/watch-tools/grant?profile=watch', { tools: ['web_search', 'recall_memory'] });
    expect(granted.status).toBe(200);
    expect(granted.headers.get('cache-control')).toBe('no-store');
    expect(granted.headers.get('pragma')).toBe('no-cache');
    expect(granted.body).toEqual({
      ok: true,
      grant_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/) as unknown,
      relay_url: relayUrl,
      key: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) as unknown,
      watch_key: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) as unknown,
      expires_at: expect.any(String) as unknown,
      tools: ['web_search', 'recall_memory'],
      max_calls: 60,
      max_jobs: 0,
    });
    expect(Date.parse(String(granted.body.expires_at)) - Date.now()).toBeGreaterThan(29 * 60_000);
    const watch = new WatchStandIn(granted.body as unknown as Grant);

    const searched = await watch.call('web_search', { query: '  weather in   Paris ', limit: 2 });
    expect(searched.status).toBe(200);
    // The relay carried only the sealed box.
    expect(Object.keys(searched.body as object).sort()).toEqual(['ct', 'n']);
    expect(JSON.stringify(searched.body)).not.toContain('Paris');
    const route = await hostCall('/web-search?profile=watch', { query: '  weather in   Paris ', limit: 2 });
    expect(searched.answer).toEqual(route.body);
    expect(searched.answer).toEqual({
      ok: true,
      query: 'weather in Paris',
      results: [
        { title: 'Paris weather', url: 'https://example.org/paris', snippet: 'Sunny, 21 °C.' },
        { title: 'Tokyo weather', url: 'https://example.org/tokyo', snippet: 'Rain.' },
      ],
    });

    expect((await watch.call('recall_memory', { query: 'what did I say about deploys?' })).answer).toEqual({
      ok: true,
      available: true,
      results: "honcho recalled 'what did I say about deploys?' (session conduit-voice)",
    });
    // A refusal answers as the route would: its status and message, sealed.
    expect((await watch.call('web_search', { query: '   ' })).answer).toEqual({
      ok: false,
      status: 400,
      detail: 'query is required',
    });

    // Another profile cannot revoke it; its own profile can, once.
    expect(await hostCall('/watch-tools/revoke?profile=other', { grant_id: watch.grant.grant_id })).toMatchObject({
      status: 200,
      body: { ok: true, revoked: false },
    });
    const revoked = await hostCall('/watch-tools/revoke?profile=watch', { grant_id: watch.grant.grant_id });
    expect(revoked.body).toEqual({ ok: true, revoked: true });
    expect(revoked.headers.get('pragma')).toBe('no-cache');
    expect(await watch.call('web_search', { query: 'weather in Oslo' })).toMatchObject({
      status: 410,
      body: { error: 'grant_closed', reason: 'host' },
    });
    expect((await hostCall('/watch-tools/revoke?profile=watch', { grant_id: watch.grant.grant_id })).body).toEqual({
      ok: true,
      revoked: false,
    });
  });

  it('refuses forged, replayed, unreadable and ungranted calls, sealed, and the relay refuses a wrong Watch key', async () => {
    const watch = await grantFor('forged', { tools: ['web_search'] });
    expect(watch.grant.tools).toEqual(['web_search']);
    const call = Buffer.from(JSON.stringify({ tool: 'web_search', args: { query: 'weather' } }));
    const refusedAs = (detail: string, status = 400) => ({ status: 200, answer: { ok: false, status, detail } });

    // Sealed without the grant's root (a relay forging a call): it does not verify.
    const rid1 = randomBytes(16).toString('base64url');
    const forged = watch.sealCall(rid1, call, randomBytes(32));
    expect(await watch.post(rid1, forged)).toMatchObject(refusedAs('The Watch call did not verify'));
    // A genuine call's box moved to a new rid (a replay under another id): bound to its rid, it does not verify.
    const rid2 = randomBytes(16).toString('base64url');
    const rid3 = randomBytes(16).toString('base64url');
    expect(await watch.post(rid3, watch.sealCall(rid2, call))).toMatchObject(
      refusedAs('The Watch call did not verify'),
    );
    // Sealed for another grant.
    const rid4 = randomBytes(16).toString('base64url');
    expect(await watch.post(rid4, watch.sealCall(rid4, call, undefined, 'G'.repeat(22)))).toMatchObject(
      refusedAs('The Watch call did not verify'),
    );
    // Verified, but not a call.
    const rid5 = randomBytes(16).toString('base64url');
    expect(await watch.post(rid5, watch.sealCall(rid5, Buffer.from('not json')))).toMatchObject(
      refusedAs('The Watch call is not readable'),
    );
    // A tool the grant does not carry, and one no grant carries.
    expect(await watch.call('recall_memory', { query: 'deploys' })).toMatchObject(
      refusedAs("This grant doesn't allow recall_memory", 403),
    );
    expect(await watch.call('run_shell', { command: 'id' })).toMatchObject(
      refusedAs("This grant doesn't allow run_shell", 403),
    );
    // The relay keeps out a Watch without the grant's key; the same rid twice is refused there too.
    const rid6 = randomBytes(16).toString('base64url');
    const genuine = watch.sealCall(rid6, call);
    expect(await watch.post(rid6, genuine, randomBytes(32).toString('base64url'))).toMatchObject({ status: 401 });
    expect((await watch.post(rid6, genuine)).answer).toMatchObject({ ok: true, query: 'weather' });
    expect(await watch.post(rid6, genuine)).toMatchObject({ status: 409, body: { error: 'duplicate_call' } });
    await hostCall('/watch-tools/revoke?profile=forged', { grant_id: watch.grant.grant_id });
  });

  it('closes a grant past its 30 minutes on the host clock: the last millisecond is answered, the next call gets 410', async () => {
    const watch = await grantFor('expiry');
    clock.advance(30 * 60_000 - 1);
    expect((await watch.call('web_search', { query: 'still here?' })).answer).toMatchObject({ ok: true });
    clock.advance(1);
    expect(await watch.call('web_search', { query: 'and now?' })).toMatchObject({
      status: 410,
      body: { error: 'grant_closed', reason: 'host' },
    });
    expect((await hostCall('/watch-tools/revoke?profile=expiry', { grant_id: watch.grant.grant_id })).body).toEqual({
      ok: true,
      revoked: false,
    });
  });

  it('forgets a grant the relay closed (the Watch hung up): its poll is answered 410 and the grant is gone here too', async () => {
    const watch = await grantFor('other', { tools: ['web_search'] });
    const gone = log.next('watch grant gone at the relay');
    const hungUp = await fetch(`${relayUrl}/v1/watch-tools/grants/${watch.grant.grant_id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${watch.grant.watch_key}` },
    });
    expect(hungUp.status).toBe(204);
    expect(await gone).toEqual({ profile: 'other', status: 410 });
    expect(log.lines.at(-1)).toEqual({ message: 'watch grant closed', fields: { profile: 'other', reason: 'relay' } });
    expect((await hostCall('/watch-tools/revoke?profile=other', { grant_id: watch.grant.grant_id })).body).toEqual({
      ok: true,
      revoked: false,
    });
  });

  it('never writes a grant key, Watch key, credential or call content to the log', () => {
    const text = JSON.stringify(log.lines);
    expect(text).not.toMatch(/[A-Za-z0-9_-]{43}/);
    expect(text).not.toContain('Paris');
    expect(text).not.toContain('deploys');
  });
});

describe('limits at their boundary', () => {
  it("counts the Watch's searches with the phone's: the 31st in a minute is refused 429, sealed, until the window moves", async () => {
    clock.advance(60_000);
    const watch = await grantFor('window', { tools: ['web_search'] });
    for (let i = 0; i < 29; i += 1) {
      expect((await hostCall('/web-search?profile=window', { query: `q${i}` })).status).toBe(200);
    }
    expect((await watch.call('web_search', { query: 'the 30th' })).answer).toMatchObject({
      ok: true,
      query: 'the 30th',
    });
    expect((await watch.call('web_search', { query: 'the 31st' })).answer).toEqual({
      ok: false,
      status: 429,
      detail: 'Too many web searches; try again shortly',
    });
    clock.advance(60_000);
    expect((await watch.call('web_search', { query: 'a minute on' })).answer).toMatchObject({ ok: true });
    await hostCall('/watch-tools/revoke?profile=window', { grant_id: watch.grant.grant_id });
  });

  it('opens a call of exactly 4,096 bytes; the relay refuses one byte more', async () => {
    const watch = await grantFor('window', { tools: ['web_search'] });
    clock.advance(60_000);
    const sized = (bytes: number) => {
      const base = JSON.stringify({ tool: 'web_search', args: { query: 'sized', pad: '' } }).length;
      return Buffer.from(
        JSON.stringify({ tool: 'web_search', args: { query: 'sized', pad: 'p'.repeat(bytes - base) } }),
      );
    };
    const ridAt = randomBytes(16).toString('base64url');
    expect(sized(4096).length).toBe(4096);
    expect((await watch.post(ridAt, watch.sealCall(ridAt, sized(4096)))).answer).toMatchObject({
      ok: true,
      query: 'sized',
    });
    const ridOver = randomBytes(16).toString('base64url');
    expect(await watch.post(ridOver, watch.sealCall(ridOver, sized(4097)))).toMatchObject({
      status: 400,
      body: { error: 'invalid_call' },
    });
    await hostCall('/watch-tools/revoke?profile=window', { grant_id: watch.grant.grant_id });
  });

  it('opens 10 grants a minute per profile, keeps the newest 2 open, and refuses the 11th until the window moves', async () => {
    clock.advance(60_000);
    const watches: WatchStandIn[] = [];
    for (let i = 0; i < 10; i += 1) watches.push(await grantFor('grants', { tools: ['web_search'] }));
    expect(await hostCall('/watch-tools/grant?profile=grants', { tools: ['web_search'] })).toMatchObject({
      status: 429,
      body: { detail: 'Too many Watch tool grants; try again shortly' },
    });
    // The oldest eight were closed as the newer ones opened; the newest two still answer.
    expect(await watches[7]?.call('web_search', { query: 'closed?' })).toMatchObject({
      status: 410,
      body: { error: 'grant_closed' },
    });
    for (const watch of watches.slice(8)) {
      expect((await watch.call('web_search', { query: 'open?' })).answer).toMatchObject({ ok: true });
    }
    clock.advance(60_000);
    const eleventh = await grantFor('grants', { tools: ['web_search'] });
    expect(await watches[8]?.call('web_search', { query: 'replaced?' })).toMatchObject({ status: 410 });
    expect((await eleventh.call('web_search', { query: 'newest' })).answer).toMatchObject({ ok: true });
    for (const watch of [watches[9], eleventh]) {
      await hostCall('/watch-tools/revoke?profile=grants', { grant_id: watch?.grant.grant_id });
    }
  });
});

describe('grant requests refused', () => {
  it.each([
    ['[]', 'Expected a JSON object'],
    [{}, 'tools must be a non-empty list'],
    [{ tools: [] }, 'tools must be a non-empty list'],
    [
      { tools: ['web_search', 'run_shell'] },
      'The Watch can only be granted web_search, recall_memory, start_job, list_jobs, cancel_job, interrupt_job, live_token, find_chat and read_chat',
    ],
    [{ tools: ['web_search'], audio: 'yes' }, 'audio must be true or false'],
    [{ tools: ['web_search'], carry_jobs_from: 'short' }, 'carry_jobs_from must be a grant id'],
    [{ tools: ['web_search'], max_jobs: 21 }, 'max_jobs must be a whole number from 0 to 20'],
    [{ tools: ['web_search'], max_jobs: 1.5 }, 'max_jobs must be a whole number from 0 to 20'],
    [{ tools: ['web_search'], job_profiles: ['../etc'] }, 'job_profiles must hold Hermes profile names'],
  ])('400 for %j', async (body, detail) => {
    expect(await hostCall('/watch-tools/grant?profile=watch', body)).toMatchObject({ status: 400, body: { detail } });
  });

  it('answers 413 for a body over 2 KiB and 400 for one that is not JSON', async () => {
    const big = JSON.stringify({ tools: ['web_search'], pad: 'x'.repeat(2048) });
    expect(await hostCall('/watch-tools/grant?profile=watch', big)).toMatchObject({
      status: 413,
      body: { detail: 'Request body is too large' },
    });
    expect(await hostCall('/watch-tools/grant?profile=watch', '{')).toMatchObject({
      status: 400,
      body: { detail: 'Request body is not JSON' },
    });
    expect(await hostCall('/watch-tools/revoke?profile=watch', {})).toMatchObject({
      status: 400,
      body: { detail: 'grant_id is required' },
    });
  });

  it('answers 409 unpaired or off HTTPS, 501 for what this host or relay cannot serve, 502 for a relay out of reach', async () => {
    const lookups = { tools: ['web_search'] };
    expect(await hostCall('/watch-tools/grant?profile=unpaired', lookups)).toMatchObject({
      status: 409,
      body: { detail: "This Hermes profile isn't paired with Conduit notifications" },
    });
    expect(await hostCall('/watch-tools/grant?profile=plainhttp', lookups)).toMatchObject({
      status: 409,
      body: { detail: 'The push relay must use HTTPS' },
    });
    expect(await hostCall('/watch-tools/grant?profile=oldrelay', lookups)).toMatchObject({
      status: 501,
      body: { detail: "The push relay doesn't support Watch tools yet" },
    });
    expect(oldRelay.calls.at(-1)).toMatchObject({ method: 'POST', url: '/v1/watch-tools/grants' });
    expect(await hostCall('/watch-tools/grant?profile=offline', lookups)).toMatchObject({
      status: 502,
      body: { detail: "Couldn't reach the push relay" },
    });
    expect(await hostCall('/watch-tools/grant?profile=watch', { tools: ['start_job', 'list_jobs'] })).toMatchObject({
      status: 501,
      body: { detail: "Watch jobs aren't available on this host" },
    });
    // This app has no Watch audio feature: refused before any grant is opened on the relay.
    expect(await hostCall('/watch-tools/grant?profile=watch', { tools: ['web_search'], audio: true })).toMatchObject({
      status: 501,
      body: { detail: "This host can't carry Watch audio" },
    });
    expect(await hostCall('/watch-tools/grant?profile=nosuch', lookups)).toMatchObject({ status: 503 });
  });

  it('leaves jobs out of a grant on a host without them: the Watch sends its jobs through the iPhone', async () => {
    const watch = await grantFor('other', { tools: ['web_search', 'start_job'], max_jobs: 3 });
    expect(watch.grant).toMatchObject({ tools: ['web_search'], max_calls: 60, max_jobs: 0 });
    expect(watch.grant.job_profiles).toBeUndefined();
    expect(await watch.call('start_job', { prompt: 'x' })).toMatchObject({
      answer: { ok: false, status: 403, detail: "This grant doesn't allow start_job" },
    });
    await hostCall('/watch-tools/revoke?profile=other', { grant_id: watch.grant.grant_id });
  });
});

describe('jobs plug in through WatchJobs; grants end with the service', () => {
  it('grants a jobs seam its tools and 120 calls, carries a renewal, and closes every grant when the app closes', async () => {
    const ran: { grant: string; tool: string; args: unknown }[] = [];
    const carried: [string, string][] = [];
    const released: string[] = [];
    const jobs: WatchJobs = {
      available: (profile) => profile.name === 'closing',
      carry: (from, to) => {
        carried.push([from.id, to.id]);
        return true;
      },
      run: (grant, tool, args) => {
        ran.push({ grant: grant.id, tool, args });
        return Promise.resolve({ ok: true, status: 'accepted', job_id: 'job-1', max_jobs: grant.settings.maxJobs });
      },
      released: (grant) => released.push(grant.id),
    };
    const second = await startHost(
      testConfig(home.root, {
        clock,
        serviceEnv: { CONDUIT_HERMES_PYTHON: pythonPath },
        upstreams: { tavily: tavily.url },
      }),
      { features: [createWatchToolsFeature({ jobs })] },
    );
    let closed = false;
    try {
      const first = await grantFor(
        'closing',
        { tools: ['web_search', 'start_job'], max_jobs: 7, job_profiles: ['work'], job_options: { model: 'm' } },
        second.url,
      );
      expect(first.grant).toMatchObject({
        tools: ['web_search', 'start_job', 'interrupt_job', 'job_news', 'answer_approval'],
        max_calls: 120,
        max_jobs: 7,
        job_profiles: ['work'],
      });
      expect(first.grant.jobs_carried_from).toBeUndefined();
      expect((await first.call('start_job', { prompt: 'book a table', urgent: true, count: 2 })).answer).toEqual({
        ok: true,
        status: 'accepted',
        job_id: 'job-1',
        max_jobs: 7,
      });
      // Only string and integer arguments reach the tool.
      expect(ran).toEqual([
        { grant: first.grant.grant_id, tool: 'start_job', args: { prompt: 'book a table', count: 2 } },
      ]);

      // A renewal that leaves max_jobs and job_profiles out keeps the call's, and its jobs move over.
      const renewal = await grantFor(
        'closing',
        { tools: ['start_job', 'list_jobs'], carry_jobs_from: first.grant.grant_id },
        second.url,
      );
      expect(renewal.grant).toMatchObject({
        max_jobs: 7,
        job_profiles: ['work'],
        jobs_carried_from: first.grant.grant_id,
      });
      expect(carried).toEqual([[first.grant.grant_id, renewal.grant.grant_id]]);

      await second.app.close();
      closed = true;
      expect(released.sort()).toEqual([first.grant.grant_id, renewal.grant.grant_id].sort());
      for (const watch of [first, renewal]) {
        expect(await watch.call('list_jobs', {})).toMatchObject({
          status: 410,
          body: { error: 'grant_closed', reason: 'host' },
        });
      }
    } finally {
      if (!closed) await second.app.close();
    }
  });
});
