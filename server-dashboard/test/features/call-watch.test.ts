import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectMcp } from '../support/mcp-client.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import {
  CALL_WATCHES_FILE,
  checkIntervalMinutes,
  inHours,
  minuteOfDay,
  parseHours,
} from '../../src/features/calls/call-watches.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { HermesJobsStandIn } from '../support/hermes-jobs-stand-in.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';

/**
 * Call watches end to end through the host: conduit_call_watch (through the MCP SDK's own client)
 * writes Hermes cron jobs on a stand-in of the API server's /api/jobs, and the jobs' runs — replayed as
 * Hermes' hooks would carry them (pre_tool_call with the run's `cron:<job>:…` task, then the tool
 * call, then the run's reply and end) — report with conduit_watch_report. Time moves by hand.
 */
const START = Date.UTC(2026, 11, 4, 9, 0, 0);
const MINUTE = 60_000;

let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;
let hermes: HermesJobsStandIn;
let clock: ManualClock;
let host: Host & { url: string };
let mcpToken: string;

async function boot(options: { hermesApi?: boolean } = {}): Promise<void> {
  host = await startHost(
    testConfig(home.root, {
      clock,
      ...(options.hermesApi === false ? {} : { hermesApi: { url: hermes.url, key: 'hermes-key' } }),
    }),
    { sleep: async () => {} },
  );
}

beforeEach(async () => {
  home = tempHermesHome();
  writeFileSync(path.join(home.root, 'config.yaml'), 'timezone: UTC\n');
  relay = new FakeRelay();
  await relay.start();
  hermes = new HermesJobsStandIn();
  await hermes.start();
  writePairing(home.root, relay.url);
  clock = new ManualClock(START);
  await boot();
  mcpToken = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
});
afterEach(async () => {
  await host.app.close();
  await relay.stop();
  await hermes.stop();
  home.cleanup();
});

function mcp(profile?: string): Promise<Client> {
  return connectMcp(host.url, mcpToken, profile);
}

async function toolNames(profile?: string): Promise<string[]> {
  const client = await mcp(profile);
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

async function callTool(name: string, args: Record<string, unknown>) {
  const client = await mcp();
  try {
    const result = await client.callTool({ name, arguments: args });
    return { isError: result.isError === true, answer: result.structuredContent as Record<string, unknown> };
  } finally {
    await client.close();
  }
}

const watch = (args: Record<string, unknown>) => callTool('conduit_call_watch', args);

async function settings(values: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${host.url}/api/plugins/conduit_push/calls`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ settings: values }),
  });
  expect(response.status).toBe(200);
}

function watchesFile(): { jobs: { job_id: string; what: string }[]; incidents: Record<string, unknown> } {
  return JSON.parse(readFileSync(path.join(home.root, CALL_WATCHES_FILE), 'utf8')) as {
    jobs: { job_id: string; what: string }[];
    incidents: Record<string, unknown>;
  };
}

/** One run of cron job `jobId` at the clock's time, as Hermes names it (session and task). */
function runOf(jobId: string) {
  const stamp = new Date(clock.now()).toISOString().replace(/[-:]/g, '').replace('T', '_').slice(0, 15);
  return { sessionId: `cron_${jobId}_${stamp}`, taskId: `cron:${jobId}:${stamp}` };
}

/** A run calls one Conduit tool: the pre_tool_call hook signs the run into its arguments, then the tool runs. */
async function runCalls(
  run: { sessionId: string; taskId: string },
  tool: 'conduit_watch_report' | 'conduit_call_user',
  args: Record<string, unknown>,
) {
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile: 'default',
    session_id: run.sessionId,
    tool_name: `mcp_conduit_${tool}`,
    tool_input: args,
    extra: { task_id: run.taskId, turn_id: `turn-${run.sessionId}`, tool_call_id: 'tc-1' },
  });
  expect(hooked.status).toBe(200);
  return callTool(tool, (hooked.answer as { args: Record<string, unknown> }).args);
}

/** The run replies what the report said, and ends (its turn end is where a call rings). */
async function runEnds(run: { sessionId: string; taskId: string }, reply: string): Promise<void> {
  const extra = { task_id: run.taskId, turn_id: `turn-${run.sessionId}` };
  await callHook(host.url, host.hookToken, {
    hook_event_name: 'post_llm_call',
    profile: 'default',
    session_id: run.sessionId,
    extra: { ...extra, assistant_response: reply },
  });
  await callHook(host.url, host.hookToken, {
    hook_event_name: 'on_session_end',
    profile: 'default',
    session_id: run.sessionId,
    extra: { ...extra, completed: true },
  });
  await host.calls.settled();
  await host.queue.whenIdle();
}

/** A whole run: report, reply exactly what the report said, end. Returns the report's answer. */
async function run(jobId: string, happening: boolean, sentence: string): Promise<Record<string, unknown>> {
  const current = runOf(jobId);
  const { answer } = await runCalls(current, 'conduit_watch_report', { happening, sentence });
  await runEnds(current, String(answer.reply));
  return answer;
}

const HOMELAB = {
  what: 'the homelab is down',
  check: 'curl -sf http://homelab.local/health; down when it fails.',
  for_minutes: 10,
};

describe('conduit_call_watch', () => {
  it('writes the Hermes cron job "Call watch: <what>", checked every few minutes with the fixed run prompt', async () => {
    const { answer } = await watch({ ...HOMELAB, hours: '08:00-22:00', unless: 'during the Sunday backup' });
    expect(answer).toMatchObject({
      status: 'watching',
      action: 'created',
      name: 'Call watch: the homelab is down',
      checks_every_minutes: 4,
      for_minutes: 10,
      hours: '08:00-22:00',
      unless: 'during the Sunday backup',
    });
    const created = hermes.writes();
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({
      method: 'POST',
      path: '/api/jobs',
      body: { name: 'Call watch: the homelab is down', schedule: 'every 4m', deliver: 'local' },
    });
    const prompt = String(created[0]?.body?.prompt);
    expect(prompt).toContain('the homelab is down');
    expect(prompt).toContain(HOMELAB.check);
    expect(prompt).toContain('during the Sunday backup');
    expect(prompt).toContain('conduit_watch_report');
    expect(prompt).toContain('[SILENT]');
    const job = [...hermes.jobs.values()][0];
    expect(job).toMatchObject({ schedule: { kind: 'interval', minutes: 4 }, enabled: true });
    expect(watchesFile().jobs).toEqual([expect.objectContaining({ job_id: job?.id, what: 'the homelab is down' })]);
  });

  it('the same what is the same watch: asking again changes its job instead of adding one', async () => {
    const first = await watch(HOMELAB);
    const again = await watch({ ...HOMELAB, what: '  The Homelab  is DOWN ', for_minutes: 60 });
    expect(again.answer).toMatchObject({ status: 'watching', action: 'updated', id: first.answer.id });
    expect(hermes.jobs.size).toBe(1);
    expect(hermes.writes().map((call) => call.method)).toEqual(['POST', 'PATCH']);
    expect([...hermes.jobs.values()][0]).toMatchObject({ schedule: { kind: 'interval', minutes: 20 } });
    expect(watchesFile().jobs).toHaveLength(1);
  });

  it('takes over a job an older plugin wrote under the same name, moving its runs onto the report', async () => {
    const old = hermes.seed({
      name: 'Call watch: the homelab is down',
      prompt: 'Load calling-the-user and keep your own state.',
      skills: ['calling-the-user'],
    });
    const { answer } = await watch(HOMELAB);
    expect(answer).toMatchObject({ status: 'watching', action: 'updated', id: old.id });
    expect(hermes.jobs.size).toBe(1);
    expect(hermes.jobs.get(old.id)).toMatchObject({
      skills: [],
      prompt: expect.stringContaining('conduit_watch_report'),
    });
  });

  it('sync changes and adds watches to match the note, and lists the ones it no longer mentions without removing them', async () => {
    await watch(HOMELAB);
    await watch({ what: 'the backup failed', check: 'read /var/log/backup.log', for_minutes: 0 });
    const older = hermes.seed({ name: 'Call watch: the printer is out of paper', prompt: 'old style' });
    const writesBefore = hermes.writes().length;
    const { answer } = await watch({
      sync: [
        { ...HOMELAB, for_minutes: 30 },
        { what: 'the disk is over 90% full', check: 'df -h /', for_minutes: 5, hours: '22:00-07:00' },
      ],
    });
    expect(answer).toMatchObject({ status: 'synced' });
    expect((answer.watches as { what: string }[]).map((w) => w.what)).toEqual([
      'the homelab is down',
      'the disk is over 90% full',
    ]);
    expect(answer.not_in_note).toEqual(
      expect.arrayContaining([
        { id: expect.any(String), what: 'the backup failed' },
        { id: older.id, what: 'the printer is out of paper' },
      ]),
    );
    expect((answer.not_in_note as unknown[]).length).toBe(2);
    expect(answer.next).toContain('Ask the user');
    const writes = hermes.writes().slice(writesBefore);
    expect(writes.map((call) => call.method)).toEqual(['PATCH', 'POST']);
    expect(writes.some((call) => call.method === 'DELETE')).toBe(false);
    expect(hermes.jobs.size).toBe(4);
  });

  it('removes a watch (its job and its record) only when asked to', async () => {
    const { answer } = await watch(HOMELAB);
    const removed = await watch({ what: 'The homelab is down', remove: true });
    expect(removed.answer).toEqual({ status: 'removed', id: answer.id, what: 'the homelab is down' });
    expect(hermes.jobs.size).toBe(0);
    expect(watchesFile().jobs).toEqual([]);
  });

  it('refuses a watch it cannot describe to Hermes, and says what Hermes refused', async () => {
    const bad = await watch({ ...HOMELAB, hours: '9-17' });
    expect(bad).toMatchObject({
      isError: true,
      answer: { status: 'refused', message: expect.stringContaining('HH:MM') },
    });
    expect((await watch({ what: 'x', for_minutes: 5 })).answer).toMatchObject({ status: 'refused' });
    hermes.cron = false;
    const down = await watch(HOMELAB);
    expect(down.answer).toMatchObject({ status: 'failed', message: expect.stringContaining('no scheduled jobs') });
    expect(hermes.jobs.size).toBe(0);
  });
});

describe('tool visibility', () => {
  it('paired on a Hermes with scheduled jobs: both watch tools; the report needs only the pairing', async () => {
    // conduit_maps is offered while the profile is paired (the host's Apple Maps engine through its relay).
    expect(await toolNames()).toEqual([
      'conduit_status',
      'conduit_call_user',
      'conduit_call_watch',
      'conduit_watch_report',
      'conduit_maps',
    ]);
    // The API server serves the default profile; the unpaired `work` profile gets neither.
    expect(await toolNames('work')).toEqual(['conduit_status']);
    writePairing(path.join(home.root, 'profiles', 'work'), relay.url);
    expect(await toolNames('work')).toEqual([
      'conduit_status',
      'conduit_call_user',
      'conduit_watch_report',
      'conduit_maps',
    ]);
  });

  it('a Hermes whose API server has no scheduled jobs (or none configured) does not offer conduit_call_watch', async () => {
    await host.app.close();
    hermes.cron = false;
    await boot();
    expect(await toolNames()).toEqual(['conduit_status', 'conduit_call_user', 'conduit_watch_report', 'conduit_maps']);
    await host.app.close();
    await boot({ hermesApi: false });
    expect(await toolNames()).toEqual(['conduit_status', 'conduit_call_user', 'conduit_watch_report', 'conduit_maps']);
  });

  it('an unpaired profile gets neither', async () => {
    await host.app.close();
    rmSync(path.join(home.root, 'conduit-push.json'));
    await boot();
    expect(await toolNames()).toEqual(['conduit_status']);
  });
});

describe("a watch's runs report with conduit_watch_report", () => {
  let jobId: string;
  beforeEach(async () => {
    await settings({ enabled: true });
    jobId = String((await watch(HOMELAB)).answer.id);
  });

  it('waits out for_minutes, calls once per incident with the run\u2019s sentence, and is [SILENT] otherwise', async () => {
    expect(await run(jobId, false, 'The homelab answers.')).toMatchObject({ reply: '[SILENT]', calling: false });
    clock.advance(4 * MINUTE);
    expect(await run(jobId, true, 'The homelab does not answer.')).toMatchObject({ reply: '[SILENT]', calling: false });
    clock.advance(4 * MINUTE);
    expect(await run(jobId, true, 'The homelab has been down for 4 minutes.')).toMatchObject({ reply: '[SILENT]' });
    expect(relay.events).toEqual([]);
    clock.advance(6 * MINUTE);
    const calling = await run(jobId, true, 'The homelab has been down for 10 minutes.');
    expect(calling).toMatchObject({
      status: 'reported',
      reply: 'The homelab has been down for 10 minutes.',
      calling: true,
    });
    expect(relay.events.map((event) => event.body.type)).toEqual(['call.requested']);
    expect(relay.events[0]?.body).toMatchObject({
      body: 'The homelab has been down for 10 minutes.',
      call: { kind: 'done', reason: 'The homelab has been down for 10 minutes.', title: 'the homelab is down' },
    });
    // Still down: the same incident never calls again.
    clock.advance(4 * MINUTE);
    expect(await run(jobId, true, 'Still down.')).toMatchObject({ reply: '[SILENT]', calling: false });
    clock.advance(4 * MINUTE);
    // Over: the user, who was called, hears it is over (a notification, not a call).
    expect(await run(jobId, false, 'The homelab is back up.')).toMatchObject({
      reply: 'The homelab is back up.',
      calling: false,
    });
    expect(relay.events.map((event) => event.body.type)).toEqual(['call.requested', 'response.ready']);
    expect(watchesFile().incidents).toEqual({});
    // A new incident waits for_minutes again.
    clock.advance(4 * MINUTE);
    expect(await run(jobId, true, 'Down again.')).toMatchObject({ reply: '[SILENT]' });
    expect(relay.events).toHaveLength(2);
  });

  it('outside the allowed hours it waits, and calls when a run inside them still sees it', async () => {
    await watch({ ...HOMELAB, hours: '09:30-18:00' });
    expect(await run(jobId, true, 'Down.')).toMatchObject({ reply: '[SILENT]' });
    clock.advance(12 * MINUTE);
    expect(await run(jobId, true, 'Down for 12 minutes.')).toMatchObject({ reply: '[SILENT]', calling: false });
    clock.advance(12 * MINUTE);
    expect(await run(jobId, true, 'Down for 24 minutes.')).toMatchObject({ reply: '[SILENT]', calling: false });
    expect(relay.events).toEqual([]);
    clock.advance(12 * MINUTE); // 09:36 UTC, the profile's timezone
    expect(await run(jobId, true, 'Down since 9 this morning.')).toMatchObject({ calling: true });
    expect(relay.events.map((event) => event.body.type)).toEqual(['call.requested']);
  });

  it('a call held back by calls off sends the run\u2019s reply as the usual push instead', async () => {
    await watch({ ...HOMELAB, for_minutes: 0 });
    await settings({ enabled: false });
    expect(await run(jobId, true, 'The homelab is down.')).toMatchObject({ calling: true });
    expect(relay.events.map((event) => [event.body.type, event.body.body])).toEqual([
      ['response.ready', 'The homelab is down.'],
    ]);
  });

  it('conduit_call_user refuses in a watch run; the report refuses outside one', async () => {
    const current = runOf(jobId);
    const refused = await runCalls(current, 'conduit_call_user', { reason: 'Down!', asked_by_user: true });
    expect(refused).toMatchObject({
      isError: true,
      answer: { status: 'refused', message: expect.stringContaining('conduit_watch_report') },
    });
    const chat = await runCalls({ sessionId: 'chat-1', taskId: 'chat-1' }, 'conduit_watch_report', {
      happening: true,
      sentence: 'Down.',
    });
    expect(chat.answer).toMatchObject({ status: 'refused', message: expect.stringContaining('call watch') });
    // Another cron job (not a watch) keeps conduit_call_user and gets no report.
    const other = await runCalls(
      { sessionId: 'cron_0123456789ab_20261204_090000', taskId: 'cron:0123456789ab:1' },
      'conduit_watch_report',
      { happening: true, sentence: 'Down.' },
    );
    expect(other.answer).toMatchObject({ status: 'refused' });
    const allowed = await runCalls(
      { sessionId: 'cron_0123456789ab_20261204_090000', taskId: 'cron:0123456789ab:1' },
      'conduit_call_user',
      { reason: 'Your report is ready.', asked_by_user: true },
    );
    expect(allowed.answer).toMatchObject({ status: 'will_call' });
  });
});

describe('watch timing rules', () => {
  it('checks about three times within for_minutes, every 2 to 30 minutes', () => {
    expect([0, 5, 10, 60, 240].map(checkIntervalMinutes)).toEqual([2, 2, 4, 20, 30]);
  });

  it('reads hours as HH:MM-HH:MM, passing midnight when the end is earlier', () => {
    const night = parseHours('22:00-07:00');
    expect(night).toEqual({ startMin: 22 * 60, endMin: 7 * 60 });
    expect([21 * 60 + 59, 22 * 60, 3 * 60, 7 * 60].map((m) => inHours(night!, m))).toEqual([false, true, true, false]);
    expect(parseHours('08:00-08:00')).toBeNull();
    expect(parseHours('8-17')).toBeNull();
    expect(minuteOfDay(Date.UTC(2026, 11, 4, 9, 36), 'UTC')).toBe(9 * 60 + 36);
    expect(minuteOfDay(Date.UTC(2026, 11, 4, 9, 36), 'Asia/Tokyo')).toBe(18 * 60 + 36);
  });
});
