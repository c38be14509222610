import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../src/log.js';
import { PERSONA_VOICE_NOTE, VOICE_LIVE_PREFIX } from '../../src/notifier/voice-note.js';
import { tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { writeRuntimeFile } from '../../src/bridge/runtime-file.js';
import { startHost, stateDirOf } from '../support/host.js';
import { writePairing } from '../support/pairing.js';
import { BRIDGE_VARIANTS, runHook } from './bridge-variants.js';

const FIXTURE = path.join(import.meta.dirname, '../fixtures/hermes-hooks/session-0.21.jsonl');

let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;

beforeEach(async () => {
  home = tempHermesHome();
  relay = new FakeRelay();
  await relay.start();
  writePairing(home.root, relay.url);
});
afterEach(async () => {
  await relay.stop();
  home.cleanup();
});

/** Every process command line on this machine that contains `secret` (Linux /proc). */
function commandLinesWith(secret: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (line.includes(secret)) found.push(line.replace(/\0/g, ' '));
    } catch {
      // the process ended
    }
  }
  return found;
}

describe.each(BRIDGE_VARIANTS)('conduit hook (the $kind bridge)', (runner) => {
  const runBridge = (stateDir: string, event: string, stdin: string, env?: NodeJS.ProcessEnv) =>
    runHook(runner, stateDir, event, stdin, env);

  it('exits 0 at once with no output when the service is not running', async () => {
    const result = await runBridge(stateDirOf(home.root), 'post_llm_call', '{"hook_event_name":"post_llm_call"}');
    expect(result).toMatchObject({ code: 0, stdout: '', stderr: '' });
  });

  it('exits 0 with no output when the runtime file points at a stopped service', async () => {
    const host = await startHost(testConfig(home.root));
    await host.app.close();
    const result = await runBridge(stateDirOf(home.root), 'pre_llm_call', '{"hook_event_name":"pre_llm_call"}');
    expect(result).toMatchObject({ code: 0, stdout: '' });
  });

  it("prints the service's answer for Hermes (pre_llm_call context)", async () => {
    const host = await startHost(testConfig(home.root));
    const payload = {
      hook_event_name: 'pre_llm_call',
      session_id: 's1',
      profile: 'default',
      extra: { conversation_history: [{ role: 'user', content: `${VOICE_LIVE_PREFIX}]\nhi` }] },
    };
    const result = await runBridge(stateDirOf(home.root), 'pre_llm_call', JSON.stringify(payload));
    await host.app.close();
    expect(result.code).toBe(0);
    expect(result.stdout.endsWith('}\n')).toBe(true);
    expect(JSON.parse(result.stdout)).toEqual({ context: PERSONA_VOICE_NOTE });
  });

  it('prints nothing when the service refuses the call (a runtime file with a wrong token) or stdin is empty', async () => {
    const host = await startHost(testConfig(home.root));
    const empty = await runBridge(stateDirOf(home.root), 'pre_llm_call', '');
    await writeRuntimeFile(stateDirOf(home.root), { url: host.url, token: 'not-the-boot-token', pid: process.pid });
    const refused = await runBridge(
      stateDirOf(home.root),
      'pre_llm_call',
      JSON.stringify({ hook_event_name: 'pre_llm_call', session_id: 's', profile: 'default', extra: {} }),
    );
    await host.app.close();
    expect(empty).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(refused).toMatchObject({ code: 0, stdout: '', stderr: '' });
  });

  it("reaches the service on loopback whatever proxy the environment or the user's ~/.curlrc names", async () => {
    const host = await startHost(testConfig(home.root));
    const userHome = path.join(home.root, 'user-home');
    mkdirSync(userHome);
    writeFileSync(path.join(userHome, '.curlrc'), 'proxy = "http://127.0.0.1:9"\nmax-time = 0.001\n');
    const env = { ...process.env, HOME: userHome, http_proxy: 'http://127.0.0.1:9', ALL_PROXY: 'http://127.0.0.1:9' };
    const payload = {
      hook_event_name: 'pre_llm_call',
      session_id: 's1',
      profile: 'default',
      extra: { user_message: `${VOICE_LIVE_PREFIX}] hello` },
    };
    const result = await runBridge(stateDirOf(home.root), 'pre_llm_call', JSON.stringify(payload), env);
    await host.app.close();
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ context: PERSONA_VOICE_NOTE });
  });

  it('drops a malformed payload: logged without its content, nothing printed, the service keeps running', async () => {
    const log = memoryLogger();
    const host = await startHost(testConfig(home.root, { log }));
    const secret = 'sk-live-very-secret-text';
    const bad = await runBridge(stateDirOf(home.root), 'post_llm_call', `{"hook_event_name": 42, "x": "${secret}"}`);
    const notJson = await runBridge(stateDirOf(home.root), 'post_llm_call', `{not json ${secret}`);
    const good = await runBridge(
      stateDirOf(home.root),
      'pre_llm_call',
      JSON.stringify({ hook_event_name: 'pre_llm_call', session_id: 's', profile: 'default', extra: {} }),
    );
    await host.app.close();
    expect([bad.code, bad.stdout, notJson.code, notJson.stdout, good.code]).toEqual([0, '', 0, '', 0]);
    expect(log.lines.filter((l) => l.includes('malformed hook payload'))).toHaveLength(2);
    expect(log.lines.join('\n')).not.toContain(secret);
  });

  it(
    'replays a recorded Hermes session: approval card, clarify batch held for the phone and answered, only what the rules allow',
    {
      timeout: 150_000,
    },
    async () => {
      await replaySession((stateDir, event, stdin) => runBridge(stateDir, event, stdin));
    },
  );
});

describe('the hook endpoint', () => {
  it('refuses a caller without the boot token', async () => {
    const host = await startHost(testConfig(home.root));
    const response = await fetch(`${host.url}/_conduit/hook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-conduit-hook-token': 'wrong' },
      body: JSON.stringify({ hook_event_name: 'pre_llm_call' }),
    });
    await host.app.close();
    expect(response.status).toBe(401);
  });
});

async function replaySession(
  runBridge: (stateDir: string, event: string, stdin: string) => Promise<{ code: number | null; stdout: string }>,
): Promise<void> {
  const host = await startHost(testConfig(home.root));
  const lines = readFileSync(FIXTURE, 'utf8').trim().split('\n');
  const outputs: string[] = [];
  for (const line of lines) {
    const payload = JSON.parse(line) as { hook_event_name: string; tool_name?: string };
    const running = runBridge(stateDirOf(home.root), payload.hook_event_name, line);
    if (payload.hook_event_name === 'pre_tool_call') {
      // The phone answers the parked batch through the relay, one question at a time.
      // (The approval card before it is parked too; the clarify batch is the one with questions.)
      let requestId: string | undefined;
      for (let i = 0; i < 200 && !requestId; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        requestId = [...relay.decisions].find(([, d]) => d.questions.length > 0)?.[0];
      }
      // While the bridge waits, its token is on no command line (`ps` shows every argv).
      expect(commandLinesWith(host.hookToken)).toEqual([]);
      relay.answer(requestId!, { release: 'v1.4 (recommended)' });
      await new Promise((resolve) => setTimeout(resolve, 30));
      relay.answer(requestId!, { notify: '["team","customers"]' });
    }
    const result = await running;
    expect(result.code).toBe(0);
    outputs.push(result.stdout);
  }
  host.notifier.flushDueReplies();
  await host.queue.whenIdle();
  await host.app.close();

  const clarifyOut = outputs[3] ?? '';
  const block = JSON.parse(clarifyOut) as { action: string; message: string };
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
  const sent = relay.events.map((e) => e.body);
  expect(sent.map((e) => e.type)).toEqual(['approval.needed', 'input.needed', 'response.ready', 'turn.failed']);
  expect(sent[0]).toMatchObject({
    decision: { kind: 'approval', session_key: 'agent:main:cli:20260101_090000_a1b2c3', choices: ['once', 'deny'] },
  });
  expect(sent[1]).toMatchObject({
    body: 'Which release should ship?',
    decision: { kind: 'clarify', questions: [{ qid: 'release' }, { qid: 'notify', multi_select: true }] },
  });
  expect(sent[2]).toMatchObject({ body: 'Done The build folder is gone. Shipping v1.4.' });
  expect(sent[3]).not.toHaveProperty('body');
  // The clarify batch was answered on the phone, so its parked decision is never released (the
  // approval card's parking and release are pinned in test/cards/).
  const clarifyId = (sent[1] as { decision: { request_id: string } }).decision.request_id;
  expect(clarifyId).toBeTruthy();
  expect(relay.released).not.toContain(clarifyId);
}

describe('the conduit CLI', { timeout: 120_000 }, () => {
  it('`conduit hook <event>` runs the same bridge (exit 0, prints the answer)', async () => {
    const host = await startHost(testConfig(home.root));
    const { spawn } = await import('node:child_process');
    const repo = path.resolve(import.meta.dirname, '../../..');
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(
        path.join(repo, 'node_modules/.bin/tsx'),
        [path.join(repo, 'server-dashboard/src/cli/main.ts'), 'hook', '--state', stateDirOf(home.root), 'pre_llm_call'],
        { stdio: ['pipe', 'pipe', 'pipe'] },
      );
      let stdout = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.on('close', (code) => resolve({ code, stdout }));
      child.stdin.end(
        JSON.stringify({
          hook_event_name: 'pre_llm_call',
          session_id: 's',
          profile: 'default',
          extra: { user_message: `${VOICE_LIVE_PREFIX}] hello` },
        }),
      );
    });
    await host.app.close();
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ context: PERSONA_VOICE_NOTE });
  });
});
