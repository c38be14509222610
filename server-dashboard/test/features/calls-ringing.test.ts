import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { CallsState } from '../../src/features/calls/calls-state.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';

/**
 * "Call me when it's done" through the host: the watch from the app's routes, the job's turn end from
 * Hermes' hooks (as the bridge posts them), and what reaches the relay (a small relay that speaks the
 * gateway wire; the e2e suite uses the real one).
 */
const PREFIX = '/api/plugins/conduit_push';

let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;
let clock: ManualClock;
let host: Host & { url: string };
/** Delays the call retries asked for; they resolve at once (the test does not wait on wall time). */
let slept: number[];
let timers: ManualTimers;

beforeEach(async () => {
  home = tempHermesHome();
  relay = new FakeRelay();
  await relay.start();
  writePairing(home.root, relay.url);
  clock = new ManualClock(Date.UTC(2026, 11, 4, 9, 0, 0));
  slept = [];
  timers = new ManualTimers();
  host = await startHost(testConfig(home.root, { clock, timers, limits: { replyHoldMs: 60_000 } }), {
    sleep: async (ms) => void slept.push(ms),
  });
});
afterEach(async () => {
  await host.app.close();
  await relay.stop();
  home.cleanup();
});

async function api(method: string, route: string, body?: unknown) {
  const response = await fetch(host.url + PREFIX + route, {
    method,
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return (await response.json()) as Record<string, unknown>;
}

async function hook(name: string, sessionId: string, extra: Record<string, unknown> = {}) {
  return callHook(host.url, host.hookToken, {
    hook_event_name: name,
    profile: 'default',
    session_id: sessionId,
    extra,
  });
}

/** A turn of `sessionId` that replies `reply` and ends as `end` says. */
async function turn(sessionId: string, reply: string, end: Record<string, unknown>) {
  await hook('pre_llm_call', sessionId, { turn_id: `t-${sessionId}` });
  await hook('post_llm_call', sessionId, { assistant_response: reply, turn_id: `t-${sessionId}` });
  await hook('on_session_end', sessionId, { turn_id: `t-${sessionId}`, ...end });
}

async function settled(): Promise<void> {
  await host.calls.settled();
  await host.queue.whenIdle();
}

const types = () => relay.events.map((event) => event.body.type);

async function watch(body: Record<string, unknown>): Promise<string> {
  const answer = await api('POST', '/calls/watches', body);
  expect(answer).toMatchObject({ ok: true, status: 'watching' });
  return String(answer.id);
}

describe('call me when it is done', () => {
  beforeEach(async () => {
    await api('PUT', '/calls', { settings: { enabled: true } });
  });

  it('calls instead of the usual push when the watched job ends, once, even when the hook is replayed', async () => {
    const id = await watch({ session_ids: ['job-1', 'job-1-stored'], title: 'Release build' });
    await turn('job-1', 'Build finished: 3 artifacts.', { completed: true });
    await settled();
    expect(types()).toEqual(['call.requested']);
    const event = relay.events[0]?.body ?? {};
    expect(event).toMatchObject({
      session_id: 'job-1',
      title: 'Release build',
      body: '\u201cRelease build\u201d finished.',
      call: { id, kind: 'done', session_ids: ['job-1', 'job-1-stored'], title: 'Release build' },
    });
    expect(String(event.event_id)).toMatch(/^call:[0-9a-f]{32}$/);
    // The replayed end finds no watch: the usual reply, never a second call.
    await hook('on_session_end', 'job-1', { turn_id: 't-job-1', completed: true });
    await settled();
    expect(types().filter((type) => type === 'call.requested')).toHaveLength(1);
    expect((await api('GET', '/calls')).watches).toBe(0);
  });

  it('a failed job calls with kind failed; a stopped one with kind stopped', async () => {
    await watch({ session_ids: ['job-f'] });
    await watch({ session_ids: ['job-s'], title: 'Backup' });
    await turn('job-f', '', { completed: false });
    clock.advance(200_000); // past the 120 s gap between calls
    await turn('job-s', '', { interrupted: true });
    await settled();
    expect(
      relay.events.map((event) => [event.body.type, (event.body.call as { kind?: string })?.kind, event.body.body]),
    ).toEqual([
      ['call.requested', 'failed', 'Your job failed.'],
      ['call.requested', 'stopped', '\u201cBackup\u201d stopped before finishing.'],
    ]);
  });

  it('a job that ends during the hold gets its usual push; the hold running out then calls (sweep)', async () => {
    const id = await watch({ session_ids: ['held-job'], title: 'Index', hold_s: 300 });
    await turn('held-job', 'Indexed 12,000 files.', { completed: true });
    await settled();
    expect(types()).toEqual(['response.ready']);
    // The phone vanished mid-call: nobody renews the hold.
    clock.advance(301_000);
    await host.calls.sweep();
    await settled();
    expect(types()).toEqual(['response.ready', 'call.requested']);
    expect(relay.events[1]?.body.call).toMatchObject({ id, kind: 'done' });
    expect((await api('GET', '/calls')).watches).toBe(0);
  });

  it("a turn end sweeps its own profile for holds that ran out, never another profile's", async () => {
    const id = await watch({ session_ids: ['swept-job'], hold_s: 60 });
    await turn('swept-job', 'Swept.', { completed: true });
    await settled();
    clock.advance(61_000);
    // A turn of another profile ends: the default profile's file is not touched.
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'on_session_end',
      profile: 'work',
      session_id: 'work-chat',
      extra: { turn_id: 't-work', completed: true },
    });
    await settled();
    expect(types()).toEqual(['response.ready']);
    // A turn of this profile ends: its sweep finds the hold that ran out and calls.
    await turn('other-chat', 'Hello.', { completed: true });
    await settled();
    expect(types()).toEqual(['response.ready', 'response.ready', 'call.requested']);
    expect(relay.events[2]?.body.call).toMatchObject({ id, kind: 'done' });
  });

  it('a hold released with hold_s 0 after the job ended answers ended and never calls', async () => {
    const id = await watch({ session_ids: ['quick-job'], hold_s: 300 });
    await turn('quick-job', 'Done.', { completed: true });
    expect(await api('PUT', `/calls/watches/${id}`, { hold_s: 0 })).toEqual({
      ok: true,
      status: 'ended',
      outcome: 'done',
    });
    clock.advance(400_000);
    await host.calls.sweep();
    await settled();
    expect(types()).toEqual(['response.ready']);
  });

  it('a hold that runs out while the job still runs keeps the watch for its next turn end', async () => {
    await watch({ session_ids: ['slow-job'], hold_s: 60 });
    clock.advance(61_000);
    await host.calls.sweep();
    expect((await api('GET', '/calls')).watches).toBe(1);
    await turn('slow-job', 'Finally done.', { completed: true });
    await settled();
    expect(types()).toEqual(['call.requested']);
  });

  it('a restart in the middle of a hold still calls: the state is on disk, the new service sweeps it', async () => {
    await watch({ session_ids: ['restart-job'], hold_s: 120 });
    await turn('restart-job', 'Done before the restart.', { completed: true });
    await settled();
    await host.app.close();
    host = await startHost(testConfig(home.root, { clock }), { sleep: async () => {} });
    clock.advance(121_000);
    await host.calls.sweep();
    await settled();
    expect(types()).toEqual(['response.ready', 'call.requested']);
  });

  it('presence holds the ring back: the watch is consumed and the usual push goes out', async () => {
    await watch({ session_ids: ['busy-job'] });
    expect(await api('PUT', '/calls/presence', { hold_s: 600 })).toMatchObject({ status: 'present' });
    await turn('busy-job', 'Done while you were talking.', { completed: true });
    await settled();
    expect(types()).toEqual(['response.ready']);
    expect((await api('GET', '/calls')).watches).toBe(0);
  });

  it('limits and calls turned off consume the watch and send the usual push', async () => {
    await watch({ session_ids: ['a'] });
    await watch({ session_ids: ['b'] });
    await turn('a', 'A done.', { completed: true });
    await turn('b', 'B done.', { completed: true }); // within min_gap_s of the first call
    await watch({ session_ids: ['c'] });
    await api('PUT', '/calls', { settings: { enabled: false } });
    clock.advance(600_000);
    await turn('c', 'C done.', { completed: true });
    await settled();
    expect(types()).toEqual(['call.requested', 'response.ready', 'response.ready']);
    const stored = JSON.parse(readFileSync(path.join(home.root, 'conduit-calls.json'), 'utf8')) as {
      history: number[];
      watches: unknown[];
    };
    expect(stored.history).toHaveLength(1);
    expect(stored.watches).toEqual([]);
  });

  it('a relay that refuses the call (429 call_limit) gets the usual push instead, without retrying', async () => {
    await watch({ session_ids: ['limited-job'] });
    relay.scripted.push({ status: 429, body: { error: 'call_limit' } });
    await turn('limited-job', 'Done.', { completed: true });
    await settled();
    expect(types()).toEqual(['call.requested', 'response.ready']);
    expect(slept).toEqual([]);
  });

  it('retries a relay 5xx at 2 s and 4 s with the same event id, then falls back', async () => {
    await watch({ session_ids: ['flaky-job'] });
    for (let i = 0; i < 3; i++) relay.scripted.push({ status: 503, body: { error: 'unavailable' } });
    await turn('flaky-job', 'Done.', { completed: true });
    await settled();
    expect(slept).toEqual([2_000, 4_000]);
    expect(types()).toEqual(['call.requested', 'call.requested', 'call.requested', 'response.ready']);
    expect(new Set(relay.events.slice(0, 3).map((event) => event.body.event_id)).size).toBe(1);
  });

  it('a 5xx followed by a duplicate counts as taken but never sent: the usual push goes out', async () => {
    await watch({ session_ids: ['dup-job'] });
    relay.scripted.push({ status: 502, body: { error: 'bad_gateway' } });
    relay.scripted.push({ status: 200, body: { accepted: true, duplicate: true } });
    await turn('dup-job', 'Done.', { completed: true });
    await settled();
    expect(types()).toEqual(['call.requested', 'call.requested', 'response.ready']);
  });

  it('APNs failing on the relay (502 apns_unreachable) falls back at once', async () => {
    await watch({ session_ids: ['apns-job'] });
    relay.scripted.push({ status: 502, body: { error: 'apns_unreachable' } });
    await turn('apns-job', 'Done.', { completed: true });
    await settled();
    expect(types()).toEqual(['call.requested', 'response.ready']);
    expect(slept).toEqual([]);
  });

  it('a malformed session id drops the job details but still names the chat', async () => {
    await watch({ session_ids: ['job-ok', 'bad/../id'] });
    await turn('job-ok', 'Done.', { completed: true });
    await settled();
    expect(relay.events[0]?.body).toMatchObject({ type: 'call.requested', session_id: 'job-ok' });
    expect(relay.events[0]?.body.call).toBeUndefined();
  });

  it('redact drops the title from the call; the call id and kind stay', async () => {
    writePairing(home.root, relay.url, { redact_content: true });
    await watch({ session_ids: ['secret-job'], title: 'Payroll export' });
    await turn('secret-job', 'Done.', { completed: true });
    await settled();
    const event = relay.events[0]?.body ?? {};
    expect(event.type).toBe('call.requested');
    expect(JSON.stringify(event)).not.toContain('Payroll');
    expect(event.call).toMatchObject({ kind: 'done', session_ids: ['secret-job'] });
  });
});

describe('alert calls (alerts on)', () => {
  beforeEach(async () => {
    await api('PUT', '/calls', { settings: { enabled: true, alerts: true } });
  });

  async function approval(sessionId: string, description: string) {
    return callHook(host.url, host.hookToken, {
      hook_event_name: 'pre_approval_request',
      profile: 'default',
      session_id: sessionId,
      extra: {
        session_key: `agent:main:${sessionId}`,
        description,
        command: 'rm -rf build',
        turn_id: `t-${sessionId}`,
      },
    });
  }

  it('an approval unanswered for a minute rings (kind approval, its description as the reason)', async () => {
    await approval('needs-ok', 'Delete the build folder');
    await host.queue.whenIdle();
    expect(types()).toEqual(['approval.needed']);
    timers.advance(59_000);
    await settled();
    expect(types()).toEqual(['approval.needed']);
    timers.advance(1_000);
    await settled();
    expect(types()).toEqual(['approval.needed', 'call.requested']);
    expect(relay.events[1]?.body).toMatchObject({
      body: 'Hermes needs your OK: Delete the build folder',
      call: { kind: 'approval', session_ids: ['needs-ok'], reason: 'Delete the build folder' },
    });
    expect(String((relay.events[1]?.body.call as { id: string }).id)).toMatch(/^[0-9a-f]{24}$/);
  });

  it('an approval answered within the minute, or its turn ending, never rings', async () => {
    await approval('answered', 'Restart nginx');
    await hook('post_approval_response', 'answered', { session_key: 'agent:main:answered', choice: 'once' });
    await approval('ended', 'Restart redis');
    await turn('ended', 'Done.', { completed: true });
    expect(host.calls.waitingAlerts).toBe(0);
    timers.advance(120_000);
    await settled();
    expect(types().filter((type) => type === 'call.requested')).toEqual([]);
  });

  it('a clarify question unanswered for a minute rings (kind question); the answer from the phone ends the hook', async () => {
    const asking = callHook(host.url, host.hookToken, {
      hook_event_name: 'pre_tool_call',
      profile: 'default',
      session_id: 'asks',
      tool_name: 'clarify',
      tool_input: { question: 'Which region should I deploy to?', choices: ['eu', 'us'] },
      extra: { turn_id: 't-asks', tool_call_id: 'call-1' },
    });
    const card = await (async () => {
      for (;;) {
        const found = relay.events.find((event) => event.body.type === 'input.needed');
        if (found) return found;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await timers.untilWaiting(1);
    timers.advance(60_000);
    await host.calls.settled();
    const call = relay.events.find((event) => event.body.type === 'call.requested');
    expect(call?.body).toMatchObject({
      body: 'Hermes has a question for you: Which region should I deploy to?',
      call: { kind: 'question', session_ids: ['asks'] },
    });
    relay.answer(String((card.body.decision as { request_id: string }).request_id), 'eu');
    expect((await asking).status).toBe(200);
    expect(host.calls.waitingAlerts).toBe(0);
  });

  it('a failed turn calls in place of its "Turn failed" push (kind failed); a refused call falls back to it', async () => {
    await turn('breaks', '', { completed: false });
    await settled();
    expect(types()).toEqual(['call.requested']);
    expect(relay.events[0]?.body).toMatchObject({
      body: 'Hermes ran into a problem with your request.',
      call: { kind: 'failed', session_ids: ['breaks'] },
    });
    clock.advance(600_000);
    relay.scripted.push({ status: 429, body: { error: 'call_limit' } });
    await turn('breaks-again', '', { completed: false });
    await settled();
    expect(types()).toEqual(['call.requested', 'call.requested', 'turn.failed']);
  });

  it('with alerts off, a failed turn sends its usual push and an approval never rings', async () => {
    await api('PUT', '/calls', { settings: { alerts: false } });
    await turn('breaks', '', { completed: false });
    await approval('quiet', 'Restart nginx');
    timers.advance(120_000);
    await settled();
    expect(types()).toEqual(['turn.failed', 'approval.needed']);
  });
});

describe('with calls off', () => {
  it('a turn end sends the usual push and writes nothing', async () => {
    await turn('plain-chat', 'Hello.', { completed: true });
    await settled();
    expect(types()).toEqual(['response.ready']);
    expect(existsSync(path.join(home.root, 'conduit-calls.json'))).toBe(false);
  });
});

describe('declined and missed calls', () => {
  it('the next turn of the session hears it once, through pre_llm_call', async () => {
    const report = {
      call_id: 'call_declined_1',
      session_ids: ['chat-9'],
      outcome: 'declined',
      title: 'Build',
      age_s: 720,
    };
    expect(await api('POST', '/calls/outcomes', report)).toEqual({ ok: true, status: 'recorded' });
    expect((await hook('pre_llm_call', 'other-chat')).answer).toBeNull();
    const first = await hook('pre_llm_call', 'chat-9', { turn_id: 't1' });
    expect(first.answer).toEqual({
      context: 'Conduit: the user declined the phone call you placed 12 minutes ago (about \u201cBuild\u201d).',
    });
    expect((await hook('pre_llm_call', 'chat-9', { turn_id: 't1' })).answer).toBeNull();
    // A late retry of the same report is not told again.
    await api('POST', '/calls/outcomes', report);
    expect((await hook('pre_llm_call', 'chat-9', { turn_id: 't2' })).answer).toBeNull();
    const state = await new CallsState(home.root).read(clock.now() / 1000);
    expect(state.told).toEqual(['call_declined_1']);
  });
});
