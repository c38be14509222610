/**
 * The host service end to end (issue 5, "Done when"): a real relay process in APNs capture mode and a
 * real host service process; pairing through the `conduit push` CLI with a code minted through the
 * relay's device API; a Hermes session replayed through the shell-hook bridge exactly as Hermes runs
 * it; and the pushes the relay captured checked for copy, titles, silence and mute rules, redaction
 * and E2E envelopes that open with the device key. The clarify batch is answered through the relay's
 * device API and its answers arrive back in Hermes (the bridge's output); an approval card is answered
 * through the relay's device API too and reaches the (fake) Hermes API server run that waits on it.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardClient } from '@conduit/sdk/dashboard';
import { createRelayClient } from '@conduit/sdk/relay';
import { sealAnswer } from '@conduit/server-dashboard/crypto/e2e-answer';
import { openNotification } from '@conduit/server-dashboard/crypto/e2e-device';
import { deriveE2eKeys } from '@conduit/server-dashboard/crypto/e2e-keys';
import { freePort } from '@conduit/contracts/testing';
import { launch, REPO_ROOT, type Launched } from '../suite/launch.js';

const TOPIC = 'dev.conduit.e2e';
const DEVICE_TOKEN = 'ab'.repeat(32);
const HOST_TOKEN = 'e2e-host-token-0123456789abcdef';
const SESSION = '20260101_090000_a1b2c3';
const BRIDGE = path.join(REPO_ROOT, 'server-dashboard/bin/conduit-hook.mjs');
const CLI = path.join(REPO_ROOT, 'server-dashboard/src/cli/main.ts');
const FIXTURE = path.join(REPO_ROOT, 'server-dashboard/test/fixtures/hermes-hooks/session-0.21.jsonl');

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'conduit-host-e2e-'));
const hermesHome = path.join(dataDir, 'hermes');
const stateDir = path.join(hermesHome, 'conduit-host');
const capturePath = path.join(dataDir, 'apns-capture.jsonl');
let relay: Launched;
let host: Launched;
let deviceAuth: string;
/** A stand-in for the Hermes API server (spec/hermes/SURFACES.md §1): approvals of waiting runs. */
const hermesApprovals: { runId: string; body: unknown }[] = [];
const hermesApi = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const match = /^\/v1\/runs\/([^/]+)\/approval$/.exec(req.url ?? '');
    if (req.headers.authorization !== 'Bearer e2e-hermes-key') return res.writeHead(401).end();
    if (!match?.[1] || req.method !== 'POST') return res.writeHead(404).end('{"error":"run_not_found"}');
    hermesApprovals.push({ runId: match[1], body: JSON.parse(Buffer.concat(chunks).toString()) });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"running"}');
  });
});
let installationId: string;

interface Captured {
  deviceToken: string;
  notification: {
    payload: {
      aps: { alert?: { title: string; body: string } };
      body?: { conduit?: Record<string, unknown> };
      conduit_e2e?: unknown;
      conduit?: Record<string, unknown>;
    };
  };
}

function captured(): Captured[] {
  if (!existsSync(capturePath)) return [];
  return readFileSync(capturePath, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Captured);
}

async function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 45_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${host?.output() ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function run(
  command: string,
  args: string[],
  stdin = '',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, HERMES_HOME: hermesHome } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

const conduit = (...args: string[]) => run(path.join(REPO_ROOT, 'node_modules/.bin/tsx'), [CLI, ...args]);
const hook = (payload: Record<string, unknown>) =>
  run(process.execPath, [BRIDGE, '--state', stateDir, String(payload.hook_event_name)], JSON.stringify(payload));

function turn(
  session: string,
  reply: string,
  extra: Record<string, unknown> = {},
  end: Record<string, unknown> = { completed: true },
) {
  const base = { session_id: session, profile: 'default', cwd: '/home/u' };
  return [
    { hook_event_name: 'pre_llm_call', ...base, extra: { turn_id: `t-${session}`, ...extra } },
    {
      hook_event_name: 'post_llm_call',
      ...base,
      extra: { turn_id: `t-${session}`, assistant_response: reply, ...extra },
    },
    { hook_event_name: 'on_session_end', ...base, extra: { turn_id: `t-${session}`, ...extra, ...end } },
  ];
}

async function replay(payloads: Record<string, unknown>[]) {
  for (const payload of payloads) expect((await hook(payload)).code).toBe(0);
}

beforeAll(async () => {
  mkdirSync(path.join(hermesHome, 'profiles'), { recursive: true });
  const db = new Database(path.join(hermesHome, 'state.db'));
  db.exec('CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, title TEXT)');
  db.prepare('INSERT INTO sessions (id, source, title) VALUES (?, ?, ?)').run(SESSION, 'cli', 'Release prep');
  db.close();
  await new Promise<void>((resolve) => hermesApi.listen(0, '127.0.0.1', resolve));
  const hermesApiUrl = `http://127.0.0.1:${(hermesApi.address() as AddressInfo).port}`;
  const [relayPort, hostPort] = [await freePort(), await freePort()];
  relay = await launch({
    name: 'relay',
    entry: 'server-relay/src/main.ts',
    port: relayPort,
    env: {
      HOST: '127.0.0.1',
      PORT: String(relayPort),
      DATA_PATH: path.join(dataDir, 'relay.sqlite'),
      PUBLIC_URL: 'https://localhost',
      APNS_TOPIC: TOPIC,
      APNS_MODE: 'accept',
      APNS_CAPTURE_PATH: capturePath,
    },
    readyPath: '/healthz',
    timeoutMs: 90_000,
  });
  host = await launch({
    name: 'host',
    entry: 'server-dashboard/src/main.ts',
    port: hostPort,
    env: {
      CONDUIT_HOST_BIND: '127.0.0.1',
      CONDUIT_HOST_PORT: String(hostPort),
      HERMES_HOME: hermesHome,
      CONDUIT_HOST_TOKEN: HOST_TOKEN,
      CONDUIT_CLARIFY_POLL_MS: '100',
      CONDUIT_REPLY_HOLD_MS: '60000',
      HERMES_API_URL: hermesApiUrl,
      HERMES_API_KEY: 'e2e-hermes-key',
    },
    readyPath: '/api/plugins/conduit_push/capabilities',
    timeoutMs: 90_000,
  });
  await until('the hook runtime file', () => existsSync(path.join(stateDir, 'runtime.json')));
}, 200_000);

afterAll(async () => {
  await host?.stop();
  await relay?.stop();
  hermesApi.closeAllConnections();
  hermesApi.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('host service with a real relay', { timeout: 180_000 }, () => {
  it('pairs through the CLI with a code minted through the relay device API', async () => {
    const relayClient = createRelayClient({ baseUrl: relay.url });
    const registered = await relayClient.POST('/v1/installations', {
      body: {
        bundle_id: TOPIC,
        device_token: DEVICE_TOKEN,
        environment: 'production',
        preferences: { show_previews: true },
      },
    });
    expect(registered.response.status).toBe(201);
    installationId = registered.data!.installation.id;
    deviceAuth = `Bearer ${registered.data!.credential}`;
    const minted = await relayClient.POST('/v1/installations/{id}/pairings', {
      params: { path: { id: installationId } },
      headers: { authorization: deviceAuth },
      body: {},
    });
    expect(minted.response.status).toBe(201);
    const paired = await conduit(
      'push',
      'pair',
      minted.data!.pairing_code,
      '--relay-url',
      relay.url,
      '--name',
      'E2E Hermes',
    );
    expect(paired.code, paired.stdout + paired.stderr).toBe(0);
    expect(paired.stdout).toContain('Paired E2E Hermes with Conduit.');
    const status = await conduit('push', 'status');
    expect(status.code).toBe(0);
    expect(status.stdout).not.toMatch(/[A-Za-z0-9_-]{43}/); // the credential's secret is never printed
  });

  it('replays a Hermes session: approval card, clarify batch answered on the phone back in Hermes, reply and failure copy with titles', async () => {
    const lines = readFileSync(FIXTURE, 'utf8').trim().split('\n');
    let clarifyOutput = '';
    for (const line of lines) {
      const payload = JSON.parse(line) as Record<string, unknown>;
      const running = hook(payload);
      if (payload.hook_event_name === 'pre_tool_call') {
        const card = await until('the clarify card', () =>
          captured().find((c) => c.notification.payload.body?.conduit?.type === 'input.needed'),
        );
        const decision = card.notification.payload.body?.conduit?.decision as {
          request_id: string;
          questions: { qid: string }[];
        };
        expect(decision.questions.map((q) => q.qid)).toEqual(['release', 'notify']);
        const relayClient = createRelayClient({ baseUrl: relay.url, headers: { authorization: deviceAuth } });
        const first = await relayClient.POST('/v1/decisions/{id}/respond', {
          params: { path: { id: decision.request_id } },
          body: { question_id: 'release', answer: 'v1.4 (recommended)' },
        });
        expect(first.data).toEqual({ status: 'answered', remaining: ['notify'] });
        const second = await relayClient.POST('/v1/decisions/{id}/respond', {
          params: { path: { id: decision.request_id } },
          body: { question_id: 'notify', answer: '["team","customers"]' },
        });
        expect(second.response.status).toBe(200);
      }
      const result = await running;
      expect(result.code).toBe(0);
      if (payload.hook_event_name === 'pre_tool_call') clarifyOutput = result.stdout;
    }
    const block = JSON.parse(clarifyOutput) as { action: string; message: string };
    expect(block.action).toBe('block');
    expect(JSON.parse(block.message)).toEqual({
      responses: [
        {
          id: 'release',
          question: 'Which release should ship?',
          choices_offered: ['v1.4 (recommended)', 'v1.5-beta'],
          user_response: 'v1.4',
        },
        {
          id: 'notify',
          question: 'Who should hear about it?',
          choices_offered: ['team', 'customers', 'nobody'],
          user_response: ['team', 'customers'],
        },
      ],
    });

    const pushes = await until('four pushes', () => {
      const all = captured();
      return all.length >= 4 ? all : undefined;
    });
    expect(pushes.every((p) => p.deviceToken === DEVICE_TOKEN)).toBe(true);
    const view = pushes.map((p) => [p.notification.payload.body?.conduit?.type, p.notification.payload.aps.alert]);
    expect(view).toEqual(
      [
        [
          'approval.needed',
          { title: 'Approval needed · Release prep', body: 'Delete the build folder (rm -rf build)' },
        ],
        ['input.needed', { title: 'Input needed · Release prep', body: 'Which release should ship?' }],
        ['response.ready', { title: 'Release prep', body: 'Done The build folder is gone. Shipping v1.4.' }],
        // The reference's generic copy, with the context line (previews on, the event has no body).
        [
          'turn.failed',
          {
            title: 'Turn failed',
            body: 'A Hermes turn could not be completed.\nProfile: default · Session: …0_d4e5f6',
          },
        ],
      ].map(([type, alert]) => [type, expect.objectContaining(alert as object)]) as unknown[],
    );
    expect(pushes[0]?.notification.payload.body?.conduit?.decision).toEqual({
      kind: 'approval',
      session_key: 'agent:main:cli:20260101_090000_a1b2c3',
      description: 'Delete the build folder (rm -rf build)',
      choices: ['once', 'deny'],
    }); // a CLI turn names no API server run, so the card is not parked on the relay
  });

  it('an approval answered through the relay device API arrives back in Hermes (the API server run); a native answer retires the card', async () => {
    const dashboard = createDashboardClient({ baseUrl: host.url, headers: { authorization: `Bearer ${HOST_TOKEN}` } });
    const phone = createRelayClient({ baseUrl: relay.url, headers: { authorization: deviceAuth } });
    const base = { session_id: 'api-run-session', profile: 'default', cwd: '/srv' };
    const approval = (n: number, description: string) => ({
      hook_event_name: 'pre_approval_request',
      ...base,
      extra: { session_key: `agent:main:api:${n}`, description, turn_id: `tr${n}`, run_id: `run_e2e_${n}` },
    });
    await replay([
      approval(1, 'Restart nginx'),
      approval(2, 'Drop table'),
      approval(3, 'Rotate logs'),
      {
        hook_event_name: 'post_approval_response',
        ...base,
        extra: { session_key: 'agent:main:api:2', choice: 'deny' },
      },
    ]);
    type Card = { session_key: string; request_id: string };
    const cardOf = (c: Captured) => c.notification.payload.body?.conduit?.decision as Card | undefined;
    // Every card is pushed (an approval is announced whatever happens to it next), each parked on the relay.
    const cards = await until('three approval cards', () => {
      const found = captured()
        .map(cardOf)
        .filter((card): card is Card => card?.session_key?.startsWith('agent:main:api:') === true);
      return found.length === 3 ? new Map(found.map((card) => [card.session_key, card.request_id])) : undefined;
    });

    // The phone answers card 1 with its device credential; the host polls it and Hermes gets it once.
    const answered = await phone.POST('/v1/decisions/{id}/respond', {
      params: { path: { id: cards.get('agent:main:api:1')! } },
      body: { answer: 'once' },
    });
    expect(answered.data).toEqual({ status: 'answered' });
    await until('the approval in Hermes', () => hermesApprovals.length === 1);
    expect(hermesApprovals).toEqual([{ runId: 'run_e2e_1', body: { choice: 'once' } }]);
    const again = await dashboard.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'agent:main:api:1', choice: 'deny' },
    });
    expect([again.response.status, again.error]).toEqual([409, { error: 'already_answered' }]);

    // Card 2 was answered natively first: its parked decision is released, so the phone hears 410.
    // The release is fired off the hook's path, so it may land a moment later: ask gently (the relay
    // allows 30 answers a minute per installation), and never accept an answer as taken.
    let late: { status: number; error: unknown } = { status: 0, error: undefined };
    for (let attempt = 0; attempt < 20 && late.status !== 410; attempt++) {
      if (attempt) await new Promise((resolve) => setTimeout(resolve, 1_000));
      const reply = await phone.POST('/v1/decisions/{id}/respond', {
        params: { path: { id: cards.get('agent:main:api:2')! } },
        body: { answer: 'once' },
      });
      late = { status: reply.response.status, error: reply.error };
      expect(late.status, 'a natively answered card must never take an answer').not.toBe(200);
    }
    expect(late).toEqual({ status: 410, error: { error: 'decision_released' } });

    // Card 3 through the host route (a phone that talks to the dashboard) also reaches the run.
    const routed = await dashboard.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'agent:main:api:3', choice: 'session' },
    });
    expect(routed.data).toEqual({ ok: true, choice: 'session', run_id: 'run_e2e_3' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(hermesApprovals).toEqual([
      { runId: 'run_e2e_1', body: { choice: 'once' } },
      { runId: 'run_e2e_3', body: { choice: 'session' } },
    ]);
  });

  it('a relay whose decisions are full (RELAY_MAX_ACTIVE_DECISIONS=1) still pushes the second approval at once, without a card', async () => {
    // A profile of its own, paired with a second relay that holds one active decision relay-wide.
    const cappedCapture = path.join(dataDir, 'apns-capture-capped.jsonl');
    const cappedPort = await freePort();
    const capped = await launch({
      name: 'capped relay',
      entry: 'server-relay/src/main.ts',
      port: cappedPort,
      env: {
        HOST: '127.0.0.1',
        PORT: String(cappedPort),
        DATA_PATH: path.join(dataDir, 'relay-capped.sqlite'),
        PUBLIC_URL: 'https://localhost',
        APNS_TOPIC: TOPIC,
        APNS_MODE: 'accept',
        APNS_CAPTURE_PATH: cappedCapture,
        RELAY_MAX_ACTIVE_DECISIONS: '1',
      },
      readyPath: '/healthz',
      timeoutMs: 90_000,
    });
    try {
      mkdirSync(path.join(hermesHome, 'profiles', 'capped'), { recursive: true });
      const relayClient = createRelayClient({ baseUrl: capped.url });
      const registered = await relayClient.POST('/v1/installations', {
        body: {
          bundle_id: TOPIC,
          device_token: 'cd'.repeat(32),
          environment: 'production',
          preferences: { show_previews: true },
        },
      });
      expect(registered.response.status).toBe(201);
      const minted = await relayClient.POST('/v1/installations/{id}/pairings', {
        params: { path: { id: registered.data!.installation.id } },
        headers: { authorization: `Bearer ${registered.data!.credential}` },
        body: {},
      });
      const paired = await conduit(
        'push',
        'pair',
        minted.data!.pairing_code,
        '--relay-url',
        capped.url,
        '--profile',
        'capped',
      );
      expect(paired.code, paired.stdout + paired.stderr).toBe(0);

      const base = { session_id: 'capped-session', profile: 'capped', cwd: '/srv' };
      const approval = (n: number, description: string) => ({
        hook_event_name: 'pre_approval_request',
        ...base,
        extra: { session_key: `agent:main:capped:${n}`, description, turn_id: `tc${n}`, run_id: `run_capped_${n}` },
      });
      await replay([approval(1, 'Restart postgres'), approval(2, 'Vacuum the database')]);
      type Card = { session_key: string; description: string; request_id?: string };
      const cards = await until('both approval pushes', () => {
        if (!existsSync(cappedCapture)) return undefined;
        const found = readFileSync(cappedCapture, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map(
            (line) => (JSON.parse(line) as Captured).notification.payload.body?.conduit?.decision as Card | undefined,
          )
          .filter((card): card is Card => card?.session_key?.startsWith('agent:main:capped:') === true);
        return found.length === 2 ? found : undefined;
      });
      // Before the fix the second approval waited in the retry queue for room that never came while card 1
      // was pending, so this wait timed out; now the plain card goes out on the 429 itself.
      const byKey = new Map(cards.map((card) => [card.session_key, card]));
      expect(byKey.get('agent:main:capped:1')).toMatchObject({ description: 'Restart postgres' });
      expect(byKey.get('agent:main:capped:1')?.request_id).toMatch(/^conduit-approval-/);
      expect(byKey.get('agent:main:capped:2')).toMatchObject({ description: 'Vacuum the database' });
      expect(byKey.get('agent:main:capped:2')).not.toHaveProperty('request_id');

      // The plain card's approval is still answered through the host route.
      const dashboard = createDashboardClient({
        baseUrl: host.url,
        headers: { authorization: `Bearer ${HOST_TOKEN}` },
      });
      const routed = await dashboard.POST('/api/plugins/conduit_push/approvals/respond', {
        params: { query: { profile: 'capped' } },
        body: { session_key: 'agent:main:capped:2', choice: 'deny' },
      });
      expect(routed.data).toEqual({ ok: true, choice: 'deny', run_id: 'run_capped_2' });
      // Card 1 answered natively: its decision is released before this relay goes away.
      await replay([
        {
          hook_event_name: 'post_approval_response',
          ...base,
          extra: { session_key: 'agent:main:capped:1', choice: 'once' },
        },
      ]);
    } finally {
      await capped.stop();
    }
  });

  it('keeps a muted cron job and a silent run quiet, and still notifies another job', async () => {
    const dashboard = createDashboardClient({ baseUrl: host.url, headers: { authorization: `Bearer ${HOST_TOKEN}` } });
    const muted = await dashboard.PUT('/api/plugins/conduit_push/cron/notifications', {
      body: { job_id: 'job99', notify: false },
    });
    expect(muted.data).toEqual({ ok: true, muted: ['job99'] });
    const before = captured().length;
    await replay([
      ...turn('cron_job99_20260101_120000', 'Disk at 97%'),
      ...turn('cron_job98_20260101_120000', 'NO_REPLY'),
      ...turn('cron_job97_20260101_120000', 'Backups finished: 3 new'),
    ]);
    const after = await until('the cron push', () => (captured().length > before ? captured() : undefined));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(
      captured()
        .slice(before)
        .map((p) => p.notification.payload.body?.conduit?.session_id),
    ).toEqual(['cron_job97_20260101_120000']);
    expect(after.length).toBe(before + 1);
  });

  it("call me when it's done: the watched job's turn end rings the phone (a VoIP push through the real relay), once", async () => {
    const JOB = '20260101_100000_c0ffee';
    const VOIP_TOKEN = 'cd'.repeat(32);
    const relayClient = createRelayClient({ baseUrl: relay.url, headers: { authorization: deviceAuth } });
    const updated = await relayClient.PUT('/v1/installations/{id}', {
      params: { path: { id: installationId } },
      body: { voip_token: VOIP_TOKEN },
    });
    expect(updated.response.status).toBe(200);
    const dashboard = createDashboardClient({ baseUrl: host.url, headers: { authorization: `Bearer ${HOST_TOKEN}` } });
    expect(
      (await dashboard.PUT('/api/plugins/conduit_push/calls', { body: { settings: { enabled: true } } })).data,
    ).toMatchObject({
      settings: { enabled: true, when_asked: true },
    });
    const watch = await dashboard.POST('/api/plugins/conduit_push/calls/watches', {
      body: { session_ids: [JOB], title: 'Nightly build' },
    });
    expect(watch.data).toMatchObject({ ok: true, status: 'watching' });
    const before = captured().length;
    await replay(turn(JOB, 'Build green: 412 tests.'));
    const ring = await until('the VoIP call', () =>
      captured()
        .slice(before)
        .find((c) => c.deviceToken === VOIP_TOKEN),
    );
    const call = ring.notification.payload.body?.conduit?.call as Record<string, unknown> | undefined;
    expect(call).toMatchObject({ kind: 'done', session_ids: [JOB], title: 'Nightly build' });
    expect(watch.data && 'id' in watch.data ? watch.data.id : undefined).toBe(call?.id);
    // The call replaced the usual push, and a replayed turn end finds no watch: no second call.
    await replay(turn(JOB, 'Build green: 412 tests.'));
    await until('the replayed turn push', () => captured().length > before + 1);
    const pushes = captured().slice(before);
    expect(pushes.filter((c) => c.deviceToken === VOIP_TOKEN)).toHaveLength(1);
    expect(pushes.map((c) => c.notification.payload.body?.conduit?.type)).toEqual(['call.requested', 'response.ready']);
    await dashboard.PUT('/api/plugins/conduit_push/calls', { body: { settings: { enabled: false } } });
  });

  it("keeps a Live Activity current: the turn's progress and its end reach the activity's push token", async () => {
    const LA_TOKEN = 'ef'.repeat(32);
    const WATCHED = '20260101_110000_abcdef';
    const relayClient = createRelayClient({ baseUrl: relay.url, headers: { authorization: deviceAuth } });
    const registered = await relayClient.PUT('/v1/live-activities', {
      body: { push_token: LA_TOKEN, session_ids: [WATCHED] },
    });
    expect(registered.response.status).toBe(200);
    const before = captured().length;
    await replay(turn(WATCHED, 'All done.'));
    const pushes = await until('the Live Activity end', () => {
      const mine = captured()
        .slice(before)
        .filter((c) => c.deviceToken === LA_TOKEN)
        .map((c) => c.notification.payload.aps as { event?: string; 'content-state'?: Record<string, unknown> });
      return mine.some((aps) => aps.event === 'end') ? mine : undefined;
    });
    expect(pushes[0]).toMatchObject({ event: 'update', 'content-state': { phase: 'thinking', tool_count: 0 } });
    expect(pushes.at(-1)).toMatchObject({ event: 'end', 'content-state': { phase: 'done' } });
    // Never the chat's text: iOS renders these payloads, they cannot be sealed.
    expect(JSON.stringify(pushes)).not.toContain('All done');
  });

  it('redact on: pushes carry no chat text; redact off restores it', async () => {
    expect((await conduit('push', 'redact', 'on')).code).toBe(0);
    const before = captured().length;
    await replay(turn(SESSION, 'Secret plan: **launch** at noon'));
    const redacted = await until('the redacted push', () => captured()[before]);
    expect(JSON.stringify(redacted)).not.toContain('launch');
    expect(redacted.notification.payload.aps.alert).toMatchObject({ title: 'Response ready' });
    expect((await conduit('push', 'redact', 'off')).code).toBe(0);
  });

  it('with an E2E key, every push is an envelope that opens with the device key', async () => {
    const credentials = JSON.parse(readFileSync(path.join(hermesHome, 'conduit-push.json'), 'utf8')) as {
      installation_id: string;
      gateway_id: string;
    };
    const secret = Buffer.alloc(32, 9);
    const kid = 'c0ffee00'.repeat(4);
    const dashboard = createDashboardClient({ baseUrl: host.url, headers: { authorization: `Bearer ${HOST_TOKEN}` } });
    const provisioned = await dashboard.POST('/api/plugins/conduit_push/e2e', {
      body: {
        installation_id: credentials.installation_id,
        gateway_id: credentials.gateway_id,
        kid,
        secret: secret.toString('base64url'),
      },
    });
    expect(provisioned.response.status).toBe(200);
    const before = captured().length;
    await replay(turn(SESSION, 'Sealed *reply* text'));
    const push = await until('the sealed push', () => captured()[before]);
    expect(JSON.stringify(push)).not.toContain('Sealed');
    const envelope = push.notification.payload.conduit_e2e as Parameters<typeof openNotification>[0];
    const inner = openNotification(
      envelope,
      'response.ready',
      deriveE2eKeys(kid, new Uint8Array(secret)),
      { installationId: credentials.installation_id, gatewayId: credentials.gateway_id },
      Math.floor(Date.now() / 1000),
    );
    expect(inner).toMatchObject({ title: 'Release prep', body: 'Sealed reply text', session_id: SESSION });

    // A sealed approval card is parked too (the envelope's req); only an answer sealed by the phone counts.
    const keys = deriveE2eKeys(kid, new Uint8Array(secret));
    const phone = createRelayClient({ baseUrl: relay.url, headers: { authorization: deviceAuth } });
    const cardAt = captured().length;
    await replay([
      {
        hook_event_name: 'pre_approval_request',
        session_id: 'sealed-api-session',
        profile: 'default',
        cwd: '/srv',
        extra: { session_key: 'agent:main:api:9', description: 'Reboot', turn_id: 'tr9', run_id: 'run_e2e_9' },
      },
    ]);
    const card = await until('the sealed approval card', () => captured()[cardAt]);
    const sealedCard = card.notification.payload.conduit_e2e as Parameters<typeof openNotification>[0] & {
      req: string;
    };
    expect(JSON.stringify(card)).not.toContain('Reboot');
    const opened = openNotification(
      sealedCard,
      'approval.needed',
      keys,
      { installationId: credentials.installation_id, gatewayId: credentials.gateway_id },
      Math.floor(Date.now() / 1000),
    );
    expect(opened).toMatchObject({ decision: { kind: 'approval', request_id: sealedCard.req } });
    const binding = {
      installationId: credentials.installation_id,
      gatewayId: credentials.gateway_id,
      requestId: sealedCard.req,
      questionId: '',
    };
    const answered = await phone.POST('/v1/decisions/{id}/respond', {
      params: { path: { id: sealedCard.req } },
      body: { answer: sealAnswer('deny', keys, binding, randomBytes(12)), gateway_id: credentials.gateway_id },
    });
    expect(answered.data).toEqual({ status: 'answered' });
    await until('the sealed approval in Hermes', () => hermesApprovals.find((a) => a.runId === 'run_e2e_9'));
    expect(hermesApprovals.at(-1)).toEqual({ runId: 'run_e2e_9', body: { choice: 'deny' } });
  });
});
