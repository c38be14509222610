/**
 * Watch jobs end to end: the real host service grants jobs on a real relay process (server-relay),
 * and a Watch stand-in (its own sealing, test/support/watch-stand-in.ts) starts, lists, cancels and
 * follows up Hermes chats through the relay's Watch side, hears their news and answers their
 * approvals. Hermes' API server is the only stand-in (test/support/hermes-runs-stand-in.ts); the host's
 * clock and timers are manual, so the 18 s accept rule is driven by hand. The relay holds a Watch's
 * call 5 s here (its WATCH_CALL_WAIT_MS seam) so an answer that never reaches it is seen quickly.
 * Each profile has a real Hermes `state.db` (test/fixtures/hermes-state-db.ts), and the host also serves
 * the voice transcripts routes, so a job's Voice Jobs label is read back as Conduit reads it
 * (`GET /voice/tags`).
 */
import { writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { createVoiceSessionsFeature } from '../../src/features/voice-sessions/index.js';
import { createWatchToolsFeature } from '../../src/features/watch/index.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import type { LogFields, Logger } from '../../src/log.js';
import { createRelayFetch } from '../../src/pairing/relay-http.js';
import { createHermesStateDb } from '../fixtures/hermes-state-db.js';
import { HermesRunsStandIn, type StandInRun } from '../support/hermes-runs-stand-in.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { RealRelay, WatchStandIn, type Grant } from '../support/watch-stand-in.js';

const PREFIX = '/api/plugins/conduit_push';
const HERMES_KEY = 'hermes-api-server-key-0123456789';
/** The `work` profile's own API server key, from its `.env`. */
const WORK_KEY = 'hermes-work-profile-key-9876543210';
const RELAY_CALL_WAIT_MS = 5000;

/** The host's log, reporting each line as it is written so a test waits for the event it expects. */
class ReportingLogger implements Logger {
  readonly lines: { message: string; fields: LogFields | undefined }[] = [];
  private readonly waiting: { message: string; resolve: (fields: LogFields | undefined) => void }[] = [];
  info = (message: string, fields?: LogFields) => this.write(message, fields);
  warn = (message: string, fields?: LogFields) => this.write(message, fields);
  error = (message: string, fields?: LogFields) => this.write(message, fields);

  private readonly watching: { message: string; match: (fields: LogFields) => boolean; wake: () => void }[] = [];

  /** Resolves with the fields of the next line with this message (armed before the event). */
  next(message: string): Promise<LogFields | undefined> {
    return new Promise((resolve) => this.waiting.push({ message, resolve }));
  }

  /** Resolves with the fields of a line with this message whose fields match, written before or later. */
  async line(message: string, match: (fields: LogFields) => boolean): Promise<LogFields> {
    for (;;) {
      const found = this.lines.find((line) => line.message === message && line.fields && match(line.fields));
      if (found?.fields) return found.fields;
      await new Promise<void>((wake) => this.watching.push({ message, match, wake }));
    }
  }

  private write(message: string, fields?: LogFields): void {
    this.lines.push({ message, fields });
    const index = this.waiting.findIndex((waiter) => waiter.message === message);
    if (index >= 0) this.waiting.splice(index, 1)[0]?.resolve(fields);
    for (const watcher of this.watching.filter((w) => w.message === message && fields && w.match(fields))) {
      this.watching.splice(this.watching.indexOf(watcher), 1);
      watcher.wake();
    }
  }
}

const home = tempHermesHome();
const clock = new ManualClock();
const timers = new ManualTimers();
const log = new ReportingLogger();
const hermes = new HermesRunsStandIn(HERMES_KEY, { work: WORK_KEY });
let relay: RealRelay;
let host: Host & { url: string };
const opened: WatchStandIn[] = [];

/**
 * The relay as the host reaches it, with one fault a test can arm: the next answer the host posts is
 * lost on the way (the request never reaches the relay), as on a network that drops it.
 */
const relayFetch = createRelayFetch({ timeoutMs: 40_000 });
let loseNextResult = false;
const lossyRelayFetch: typeof fetch = (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  const method = input instanceof Request ? input.method : (init?.method ?? 'GET');
  if (loseNextResult && method === 'POST' && url.includes('/results/')) {
    loseNextResult = false;
    return Promise.reject(new TypeError('fetch failed'));
  }
  return relayFetch(input, init);
};

async function hostCall(route: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(host.url + PREFIX + route, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * The profile's Voice Jobs labels as Conduit reads them (`GET /voice/tags`), once the host has filed
 * the job (its log line, an event, never a sleep).
 */
async function voiceTagsAfterFiling(profile: string, jobId: string): Promise<Record<string, unknown>> {
  await log.line('watch job filed under voice jobs', (fields) => fields.job_id === jobId);
  const response = await fetch(`${host.url}${PREFIX}/voice/tags?profile=${profile}`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { tags: Record<string, unknown> }).tags;
}

async function grantJobs(body: Record<string, unknown>): Promise<WatchStandIn> {
  const answer = await hostCall('/watch-tools/grant?profile=default', body);
  if (answer.status !== 200) throw new Error(`grant ${answer.status} ${JSON.stringify(answer.body)}`);
  const watch = new WatchStandIn(answer.body as unknown as Grant);
  opened.push(watch);
  return watch;
}

/** One sealed call through the relay, answered 200; its opened answer. */
async function ask(watch: WatchStandIn, tool: string, args: Record<string, unknown> = {}) {
  const answered = await watch.call(tool, args);
  if (answered.status !== 200) throw new Error(`${tool}: ${answered.status} ${JSON.stringify(answered.body)}`);
  return answered.answer as Record<string, unknown>;
}

/** Starts a job whose run Hermes accepts at once; the job's id and its run at the stand-in. */
async function startJob(watch: WatchStandIn, task: string, extra: Record<string, unknown> = {}) {
  const created = hermes.nextRun();
  const running = log.next('watch job running');
  const answer = await ask(watch, 'start_job', { task, ...extra });
  expect(answer).toMatchObject({ ok: true, status: 'started' });
  await running;
  return { jobId: String(answer.job_id), run: await created, answer };
}

/** Ends a run in Hermes and waits until the host has taken it in. */
async function finish(run: StandInRun, event: string, fields: Record<string, unknown> = {}) {
  const ended = log.next('watch job ended');
  hermes.emit(run, event, fields);
  return ended;
}

beforeAll(async () => {
  await hermes.start();
  relay = await RealRelay.start(home.root, { WATCH_CALL_WAIT_MS: String(RELAY_CALL_WAIT_MS) });
  await relay.pair(home.root);
  writeFileSync(path.join(home.root, 'profiles', 'work', '.env'), `API_SERVER_KEY=${WORK_KEY}\n`);
  // Hermes' own session stores, where Conduit's Voice Jobs labels live.
  createHermesStateDb(path.join(home.root, 'state.db'));
  createHermesStateDb(path.join(home.root, 'profiles', 'work', 'state.db'));
  host = await startHost(
    testConfig(home.root, { clock, timers, log, hermesApi: { url: hermes.url, key: HERMES_KEY } }),
    {
      features: [
        createWatchToolsFeature({ relayFetch: lossyRelayFetch }),
        createVoiceSessionsFeature({ callEndSteps: [] }),
      ],
    },
  );
}, 120_000);

beforeEach(async () => {
  // Each test opens its own grants: the earlier ones are revoked, and the profile's grant window moves on.
  for (const watch of opened.splice(0)) {
    await hostCall('/watch-tools/revoke?profile=default', { grant_id: watch.grant.grant_id });
  }
  clock.advance(61_000);
  hermes.steerAccepts = true;
});

afterAll(async () => {
  await host?.app.close();
  await relay?.stop();
  await hermes.stop();
  await rm(home.root, { recursive: true, force: true });
});

describe('Watch jobs through the real relay and Hermes runs', () => {
  it('starts a job as a Hermes chat with the call’s job options, lists it, hears it finish, and cancels another', async () => {
    const watch = await grantJobs({
      tools: ['start_job', 'list_jobs', 'cancel_job'],
      job_options: { model: 'gpt-5.5', provider: 'openai-codex', reasoning_effort: 'low' },
    });
    expect(watch.grant).toMatchObject({
      tools: ['start_job', 'list_jobs', 'cancel_job', 'interrupt_job', 'job_news', 'answer_approval'],
      max_calls: 120,
      max_jobs: 5,
      job_profiles: [],
    });

    const { jobId, run, answer } = await startJob(watch, 'Check whether the nightly build passed', {
      title: 'Nightly build',
    });
    expect(answer).toEqual({ ok: true, status: 'started', job_id: jobId, title: 'Nightly build', jobs_left: 4 });
    // An ordinary Hermes chat of its own, on the phone's voice-job model, started once.
    expect(run.input).toBe('Check whether the nightly build passed');
    expect(run.body).toMatchObject({
      model: 'gpt-5.5',
      provider: 'openai-codex',
      model_options: { reasoning_effort: 'low' },
    });
    expect(run.body.session_id).toMatch(/^\d{8}_\d{6}_[0-9a-f]{12}$/);
    expect(run.sessionHeader).toBe(run.body.session_id);
    expect(run.idempotencyKey).toMatch(/^conduit-watch-job-/);
    // Filed under the grant's profile's Voice Jobs, like a job started from the phone.
    expect((await voiceTagsAfterFiling('default', jobId))[String(run.body.session_id)]).toEqual({ kind: 'job' });

    expect(await ask(watch, 'list_jobs')).toEqual({
      ok: true,
      jobs: [{ job_id: jobId, title: 'Nightly build', status: 'running', started_at: expect.any(String) as unknown }],
      max_jobs: 5,
      jobs_left: 4,
      running: 1,
    });
    expect(await ask(watch, 'job_news')).toEqual({ ok: true, news: [], running: 1 });

    hermes.emit(run, 'message.delta', { delta: 'Looking…' });
    expect(await finish(run, 'run.completed', { output: 'The nightly build passed: 412 tests green.' })).toEqual({
      profile: 'default',
      status: 'completed',
      heard: true,
    });
    const news = await ask(watch, 'job_news');
    expect(news).toEqual({
      ok: true,
      news: [
        {
          news_id: expect.any(String) as unknown,
          job_id: jobId,
          kind: 'finished',
          title: 'Nightly build',
          result: 'The nightly build passed: 412 tests green.',
        },
      ],
      running: 0,
    });
    // Heard once (the answer reached the relay), it is not told again.
    expect(await ask(watch, 'job_news')).toEqual({ ok: true, news: [], running: 0 });
    expect((await ask(watch, 'list_jobs')).jobs).toMatchObject([
      { job_id: jobId, status: 'completed', result: 'The nightly build passed: 412 tests green.' },
    ]);

    // Cancelling stops the run in Hermes; a job cancelled by the Watch brings no news.
    const second = await startJob(watch, 'Summarise my unread mail');
    expect(second.answer).toMatchObject({ title: 'Summarise my unread mail', jobs_left: 3 });
    const stopped = hermes.nextOf('POST', 'stop');
    const ended = log.next('watch job ended');
    expect(await ask(watch, 'cancel_job', { job_id: second.jobId })).toEqual({
      ok: true,
      outcome: 'cancelled',
      title: 'Summarise my unread mail',
    });
    expect((await stopped).run?.id).toBe(second.run.id);
    expect(await ended).toMatchObject({ status: 'cancelled' });
    expect(await ask(watch, 'job_news')).toEqual({ ok: true, news: [], running: 0 });
    expect(await ask(watch, 'cancel_job', { job_id: second.jobId })).toEqual({
      ok: true,
      outcome: 'finished',
      title: 'Summarise my unread mail',
      status: 'cancelled',
    });
    expect(await ask(watch, 'cancel_job', { job_id: 'nope' })).toEqual({ ok: true, outcome: 'unknown_job' });
    expect(await ask(watch, 'cancel_job', {})).toEqual({ ok: false, status: 400, detail: 'job_id is required' });
    expect(await ask(watch, 'start_job', { task: '   ' })).toEqual({
      ok: false,
      status: 400,
      detail: 'task is required',
    });

    // A job still running when its call ends keeps running in Hermes: nothing stops it.
    const third = await startJob(watch, 'Rebuild the photo index');
    const revoked = await hostCall('/watch-tools/revoke?profile=default', { grant_id: watch.grant.grant_id });
    expect(revoked.body).toEqual({ ok: true, revoked: true });
    expect(await finish(third.run, 'run.completed', { output: 'done' })).toEqual({
      profile: 'default',
      status: 'completed',
      heard: false,
    });
    expect(third.run.stops).toBe(0);
  });

  it('a renewal with carry_jobs_from moves the call’s jobs and keeps its limit, options and profiles', async () => {
    const first = await grantJobs({
      tools: ['start_job', 'list_jobs'],
      max_jobs: 2,
      job_profiles: ['work'],
      job_options: { model: 'm-1' },
    });
    const one = await startJob(first, 'First task');
    expect(one.answer).toMatchObject({ jobs_left: 1 });

    const renewal = await grantJobs({
      tools: ['start_job', 'list_jobs', 'cancel_job'],
      carry_jobs_from: first.grant.grant_id,
    });
    expect(renewal.grant).toMatchObject({
      max_jobs: 2,
      job_profiles: ['work'],
      jobs_carried_from: first.grant.grant_id,
    });
    expect((await ask(renewal, 'list_jobs')).jobs).toMatchObject([{ job_id: one.jobId, status: 'running' }]);
    // The limit counts per call: one job started before the renewal, one left after it.
    const two = await startJob(renewal, 'Second task');
    expect(two.answer).toMatchObject({ jobs_left: 0 });
    expect(two.run.body).toMatchObject({ model: 'm-1' });
    expect(await ask(renewal, 'start_job', { task: 'Third task' })).toEqual({
      ok: true,
      status: 'not_started',
      error: 'This call has already started its 2 jobs',
    });
    // The carried job's news and cancel go through the new grant.
    await finish(one.run, 'run.completed', { output: 'first done' });
    expect((await ask(renewal, 'job_news')).news).toMatchObject([
      { job_id: one.jobId, kind: 'finished', result: 'first done' },
    ]);
    expect(await ask(renewal, 'cancel_job', { job_id: two.jobId })).toMatchObject({ outcome: 'cancelled' });
  });

  it('a start Hermes takes longer than 18 s to accept is answered accepted; a later failure comes as news, a later accept runs', async () => {
    const watch = await grantJobs({ tools: ['start_job', 'list_jobs'], max_jobs: 1 });
    const held = hermes.holdNextStart();
    let answered = false;
    const starting = ask(watch, 'start_job', { task: 'Order more coffee beans' }).then((answer) => {
      answered = true;
      return answer;
    });
    const start = await held;
    timers.advance(17_999);
    await Promise.resolve();
    expect(answered).toBe(false);
    timers.advance(1);
    const answer = await starting;
    expect(answer).toEqual({
      ok: true,
      status: 'accepted',
      job_id: expect.any(String) as unknown,
      title: 'Order more coffee beans',
      jobs_left: 0,
    });
    expect((await ask(watch, 'list_jobs')).jobs).toMatchObject([{ job_id: answer.job_id, status: 'starting' }]);

    const ended = log.next('watch job ended');
    start.release({ status: 429, error: 'too_many_runs' });
    expect(await ended).toMatchObject({ status: 'failed', heard: true });
    expect((await ask(watch, 'job_news')).news).toEqual([
      {
        news_id: expect.any(String) as unknown,
        job_id: answer.job_id,
        kind: 'failed',
        title: 'Order more coffee beans',
        error: 'Hermes is busy with too many runs; try again shortly',
      },
    ]);
    // A start that never came to be is not counted: the call's one job is still there to start.
    expect(await ask(watch, 'list_jobs')).toMatchObject({ jobs_left: 1 });

    // A late start that Hermes does accept runs as any job.
    const heldAgain = hermes.holdNextStart();
    const late = ask(watch, 'start_job', { task: 'Find a plumber' });
    const lateStart = await heldAgain;
    timers.advance(18_000);
    const lateAnswer = await late;
    expect(lateAnswer).toMatchObject({ status: 'accepted', jobs_left: 0 });
    const running = log.next('watch job running');
    lateStart.release({ accept: true });
    expect(await running).toEqual({ profile: 'default', late: true });
    // Filed once Hermes took it; the start Hermes refused made no chat and is filed nowhere.
    const tags = await voiceTagsAfterFiling('default', String(lateAnswer.job_id));
    expect(tags[String(lateStart.run.body.session_id)]).toEqual({ kind: 'job' });
    expect(tags[String(start.run.body.session_id)]).toBeUndefined();
    await finish(lateStart.run, 'run.completed', { output: 'Two plumbers can come tomorrow.' });
    expect((await ask(watch, 'job_news')).news).toMatchObject([
      { kind: 'finished', result: 'Two plumbers can come tomorrow.' },
    ]);
  });

  it('a start whose answer was lost is asked again with its key and re-attaches to the one run', async () => {
    const watch = await grantJobs({ tools: ['start_job', 'cancel_job'] });
    const runsBefore = hermes.runs.size;
    hermes.dropStartAnswers = 1;
    const first = hermes.nextOf('POST', 'runs');
    const replay = hermes.nextOf('POST', 'runs');
    const running = log.next('watch job running');
    expect(await ask(watch, 'start_job', { task: 'Water the plants' })).toMatchObject({ status: 'started' });
    await running;
    const original = (await first).run;
    expect((await replay).run).toBe(original);
    expect(hermes.runs.size).toBe(runsBefore + 1);
    if (original) await finish(original, 'run.completed', { output: 'Watered.' });
    expect((await ask(watch, 'job_news')).news).toMatchObject([{ kind: 'finished', result: 'Watered.' }]);

    // Cancelled while Hermes was still accepting it: stopped as soon as it has a run, and no news.
    const held = hermes.holdNextStart();
    const starting = ask(watch, 'start_job', { task: 'Mow the lawn' });
    const start = await held;
    timers.advance(18_000);
    const accepted = await starting;
    expect(await ask(watch, 'cancel_job', { job_id: accepted.job_id })).toEqual({
      ok: true,
      outcome: 'cancelled',
      title: 'Mow the lawn',
    });
    const stopped = hermes.nextOf('POST', 'stop');
    const ended = log.next('watch job ended');
    start.release({ accept: true });
    expect((await stopped).run).toBe(start.run);
    expect(await ended).toMatchObject({ status: 'cancelled' });
    expect(await ask(watch, 'job_news')).toEqual({ ok: true, news: [], running: 0 });
  });

  it('job news whose answer never reached the relay is sent again with the next call', async () => {
    const watch = await grantJobs({ tools: ['start_job'] });
    const { jobId, run } = await startJob(watch, 'Check the weather for the hike');
    await finish(run, 'run.completed', { output: 'Dry until 4 pm.' });

    loseNextResult = true;
    const lost = log.next('watch answer not delivered');
    const first = await watch.call('job_news', {});
    // The relay gave up on the Watch's call: the host's answer never came.
    expect(first).toMatchObject({ status: 504, body: { error: 'host_timeout' } });
    await lost;

    const again = await ask(watch, 'job_news');
    expect(again.news).toMatchObject([{ job_id: jobId, kind: 'finished', result: 'Dry until 4 pm.' }]);
    expect(await ask(watch, 'job_news')).toEqual({ ok: true, news: [], running: 0 });
  }, 30_000);

  it('max_jobs is the call’s limit and three jobs run at once', async () => {
    const watch = await grantJobs({ tools: ['start_job', 'list_jobs'], max_jobs: 4 });
    const jobs = [];
    for (const task of ['one', 'two', 'three']) jobs.push(await startJob(watch, `Task ${task}`));
    expect(await ask(watch, 'start_job', { task: 'Task four' })).toEqual({
      ok: true,
      status: 'not_started',
      error: '3 jobs are already running; wait for one to finish',
    });
    await finish(jobs[0]!.run, 'run.completed', { output: 'ok' });
    expect((await startJob(watch, 'Task four')).answer).toMatchObject({ jobs_left: 0 });
    await finish(jobs[1]!.run, 'run.failed', { error: 'tool crashed' });
    expect(await ask(watch, 'start_job', { task: 'Task five' })).toEqual({
      ok: true,
      status: 'not_started',
      error: 'This call has already started its 4 jobs',
    });
    expect(await ask(watch, 'list_jobs')).toMatchObject({ max_jobs: 4, jobs_left: 0, running: 2 });
    expect((await ask(watch, 'job_news')).news).toMatchObject([
      { kind: 'finished', result: 'ok' },
      { kind: 'failed', error: 'tool crashed' },
    ]);

    const none = await grantJobs({ tools: ['start_job'], max_jobs: 0 });
    expect(none.grant).toMatchObject({ max_jobs: 0 });
    expect(await ask(none, 'start_job', { task: 'anything' })).toEqual({
      ok: true,
      status: 'not_started',
      error: "This call can't start jobs",
    });
  });

  it('a job on a listed profile runs there on its own model; a name not listed is not started, never guessed at', async () => {
    const watch = await grantJobs({
      tools: ['start_job', 'list_jobs'],
      job_profiles: ['work', 'fam'],
      job_options: { model: 'm-3' },
    });
    expect(watch.grant.job_profiles).toEqual(['work', 'fam']);
    const before = hermes.requests.length;
    expect(await ask(watch, 'start_job', { task: 'Plan the trip', profile: 'ops' })).toEqual({
      ok: true,
      status: 'not_started',
      error: "ops isn't one of the profiles this call may start jobs on",
    });
    // Listed, but no such profile (so no key of its own) on this host.
    expect(await ask(watch, 'start_job', { task: 'Plan the trip', profile: 'fam' })).toEqual({
      ok: true,
      status: 'not_started',
      error: "This host can't start jobs on fam",
    });
    expect(hermes.requests.length).toBe(before);

    // work runs under /p/work with its own key, on its own model: job_options stay with the grant's profile.
    const { jobId, run, answer } = await startJob(watch, 'Plan the team offsite', { profile: 'work' });
    expect(answer).toEqual({
      ok: true,
      status: 'started',
      job_id: jobId,
      title: 'Plan the team offsite',
      profile: 'work',
      jobs_left: 4,
    });
    expect(run.profile).toBe('work');
    expect(run.body.model).toBeUndefined();
    // Filed under work's Voice Jobs, where it runs, and not under the grant's profile's.
    const sessionId = String(run.body.session_id);
    expect((await voiceTagsAfterFiling('work', jobId))[sessionId]).toEqual({ kind: 'job' });
    expect((await voiceTagsAfterFiling('default', jobId))[sessionId]).toBeUndefined();
    expect((await ask(watch, 'list_jobs')).jobs).toMatchObject([{ job_id: jobId, profile: 'work', status: 'running' }]);
    await finish(run, 'run.completed', { output: 'Booked the lake house.' });
    expect((await ask(watch, 'job_news')).news).toMatchObject([
      { job_id: jobId, kind: 'finished', result: 'Booked the lake house.' },
    ]);
  });

  it('interrupt_job steers a running job, queues words it cannot take now, and answers finished, failed or unknown_job', async () => {
    const watch = await grantJobs({ tools: ['start_job', 'interrupt_job'], job_options: { model: 'm-2' } });
    const { jobId, run } = await startJob(watch, 'Draft the newsletter', { title: 'Newsletter' });
    const steered = hermes.nextOf('POST', 'steer');
    expect(await ask(watch, 'interrupt_job', { job_id: jobId, message: 'Make it shorter' })).toEqual({
      ok: true,
      outcome: 'interrupted',
      title: 'Newsletter',
    });
    expect((await steered).body).toEqual({ input: 'Make it shorter' });

    // Follow-ups to one job go one at a time: a second while the first is on its way is refused.
    const held = hermes.holdNextSteer();
    const slow = ask(watch, 'interrupt_job', { job_id: jobId, message: 'Use the blue template' });
    const release = await held;
    expect(await ask(watch, 'interrupt_job', { job_id: jobId, message: 'No, the red one' })).toEqual({
      ok: false,
      status: 409,
      detail: 'A follow-up to this job is still on its way; try again shortly',
    });
    release();
    expect(await slow).toMatchObject({ outcome: 'interrupted' });
    expect(run.steers).toEqual(['Make it shorter', 'Use the blue template']);

    // A step that cannot take words now: they go as the chat's next turn, in the same session.
    hermes.steerAccepts = false;
    expect(await ask(watch, 'interrupt_job', { job_id: jobId, message: 'And add a joke' })).toEqual({
      ok: true,
      outcome: 'queued',
      title: 'Newsletter',
    });
    const followUp = hermes.nextRun();
    hermes.emit(run, 'run.completed', { output: 'Short draft.' });
    const next = await followUp;
    expect(next.input).toBe('And add a joke');
    expect(next.sessionHeader).toBe(run.sessionHeader);
    expect(next.body).toMatchObject({ session_id: run.body.session_id, model: 'm-2' });
    expect(next.idempotencyKey).not.toBe(run.idempotencyKey);
    await finish(next, 'run.completed', { output: 'Short draft, with a joke.' });
    expect((await ask(watch, 'job_news')).news).toMatchObject([
      { job_id: jobId, kind: 'finished', result: 'Short draft, with a joke.' },
    ]);

    expect(await ask(watch, 'interrupt_job', { job_id: jobId, message: 'One more thing' })).toEqual({
      ok: true,
      outcome: 'finished',
      title: 'Newsletter',
    });
    const failing = await startJob(watch, 'Renew the certificate', { title: 'Certificate' });
    await finish(failing.run, 'run.failed', { error: 'acme timeout' });
    expect(await ask(watch, 'interrupt_job', { job_id: failing.jobId, message: 'try again' })).toEqual({
      ok: true,
      outcome: 'failed',
      title: 'Certificate',
      error: 'acme timeout',
    });
    expect(await ask(watch, 'interrupt_job', { job_id: 'gone', message: 'hello' })).toEqual({
      ok: true,
      outcome: 'unknown_job',
    });
    expect(await ask(watch, 'interrupt_job', { job_id: jobId })).toEqual({
      ok: false,
      status: 400,
      detail: 'message is required',
    });
  });

  it('an approval request comes as news and is answered once or denied, never for the session', async () => {
    const watch = await grantJobs({ tools: ['start_job', 'list_jobs'] });
    const { jobId, run } = await startJob(watch, 'Clean the build folder', { title: 'Cleanup' });
    const waits = log.next('watch job waits on an approval');
    hermes.emit(run, 'approval.request', {
      request_id: 'apr-1',
      command: 'rm -rf build/',
      description: 'Delete the build folder',
      choices: ['once', 'session', 'always', 'deny'],
    });
    await waits;
    const news = (await ask(watch, 'job_news')).news as Record<string, unknown>[];
    expect(news).toEqual([
      {
        news_id: expect.any(String) as unknown,
        job_id: jobId,
        kind: 'approval',
        title: 'Cleanup',
        approval: {
          approval_id: expect.any(String) as unknown,
          command: 'rm -rf build/',
          description: 'Delete the build folder',
          choices: ['once', 'deny'],
        },
      },
    ]);
    expect((await ask(watch, 'list_jobs')).jobs).toMatchObject([
      { job_id: jobId, status: 'waiting_for_approval', waiting_for_approval: true },
    ]);
    const approvalId = (news[0]?.approval as { approval_id: string }).approval_id;
    expect(await ask(watch, 'answer_approval', { job_id: jobId, approval_id: approvalId, choice: 'always' })).toEqual({
      ok: false,
      status: 400,
      detail: 'The Watch can only approve once or deny',
    });
    const posted = hermes.nextOf('POST', 'approval');
    expect(await ask(watch, 'answer_approval', { job_id: jobId, approval_id: approvalId, choice: 'once' })).toEqual({
      ok: true,
      outcome: 'approved',
      title: 'Cleanup',
    });
    expect((await posted).body).toEqual({ choice: 'once', request_id: 'apr-1' });
    // Answered once: a second answer finds nothing to answer, and Hermes is not asked again.
    expect(await ask(watch, 'answer_approval', { job_id: jobId, approval_id: approvalId, choice: 'deny' })).toEqual({
      ok: true,
      outcome: 'no_approval',
      title: 'Cleanup',
    });
    expect(run.approvals).toEqual([{ choice: 'once', request_id: 'apr-1' }]);
    expect((await ask(watch, 'list_jobs')).jobs).toMatchObject([{ job_id: jobId, status: 'running' }]);

    // A second approval, denied; one the Watch never heard of is withdrawn once answered.
    const again = log.next('watch job waits on an approval');
    hermes.emit(run, 'approval.request', {
      request_id: 'apr-2',
      command: 'git push --force',
      description: 'Force push',
    });
    await again;
    const denied = hermes.nextOf('POST', 'approval');
    expect(await ask(watch, 'answer_approval', { job_id: jobId, choice: 'deny' })).toMatchObject({ outcome: 'denied' });
    expect((await denied).body).toEqual({ choice: 'deny', request_id: 'apr-2' });
    expect(await ask(watch, 'job_news')).toEqual({ ok: true, news: [], running: 1 });

    // Left unanswered, Hermes' own timeout denies it: once the run goes on, the Watch is no longer asked.
    const third = log.next('watch job waits on an approval');
    hermes.emit(run, 'approval.request', { request_id: 'apr-3', command: 'shutdown -r now', description: 'Reboot' });
    await third;
    const settled = log.next('watch job approval settled in Hermes');
    hermes.emit(run, 'tool.completed', { tool: 'terminal', duration: 60, error: 'denied' });
    await settled;
    expect(await ask(watch, 'job_news')).toEqual({ ok: true, news: [], running: 1 });
    expect(await ask(watch, 'answer_approval', { job_id: jobId, choice: 'once' })).toMatchObject({
      outcome: 'no_approval',
    });
    expect(await ask(watch, 'answer_approval', { job_id: 'nope', choice: 'once' })).toEqual({
      ok: true,
      outcome: 'unknown_job',
    });
  });
});
