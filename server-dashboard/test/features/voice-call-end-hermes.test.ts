import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import type { CallEndReport } from '../../src/features/voice-sessions/call-ends.js';
import { createVoiceSessionsFeature } from '../../src/features/voice-sessions/index.js';
import { createHermesStateDb, seedHermesSessions } from '../fixtures/hermes-state-db.js';
import { fakeHermesPython } from '../fixtures/fake-hermes-python.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

/**
 * A saved call's end run by Hermes' own code on Hermes' Python (hermes-call-end.ts), against the
 * stand-in of Hermes' packages (fixtures/fake-hermes-python.ts), which records what it was asked to do.
 */

const PREFIX = '/api/plugins/conduit_push';
const home = tempHermesHome();
const clock = new ManualClock();
let host: Host & { url: string };

const reports: CallEndReport[] = [];
const wakers: (() => void)[] = [];
async function endOf(sessionId: string): Promise<CallEndReport> {
  for (;;) {
    const found = reports.find((report) => report.call.sessionId === sessionId);
    if (found) return found;
    await new Promise<void>((resolve) => wakers.push(resolve));
  }
}

const homeOf = (profile: string) => (profile === 'default' ? home.root : path.join(home.root, 'profiles', profile));

function hermesCalls(profile: string): Record<string, unknown>[] {
  const file = path.join(homeOf(profile), 'hermes-calls.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function save(profile: string, body: Record<string, unknown>) {
  const response = await fetch(`${host.url}${PREFIX}/voice/sessions?profile=${profile}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ engine: 'gemini-live', ...body }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const turn = (index: number, role: 'user' | 'assistant', text: string) => ({
  index,
  role,
  text,
  at: 1_780_000_000 + index,
});

beforeAll(async () => {
  const { python } = fakeHermesPython(home.root);
  for (const [profile, provider] of [
    ['mem', 'honcho'],
    ['plain', null],
    ['failing', 'failing-end'],
  ] as const) {
    mkdirSync(homeOf(profile), { recursive: true });
    createHermesStateDb(path.join(homeOf(profile), 'state.db'));
    if (provider) writeFileSync(path.join(homeOf(profile), 'config.yaml'), `memory:\n  provider: ${provider}\n`);
  }
  seedHermesSessions(path.join(homeOf('mem'), 'state.db'), [
    { id: 'chat_typed', source: 'desktop', title: 'Groceries', messages: [{ role: 'user', content: 'milk?' }] },
  ]);
  host = await startHost(testConfig(home.root, { clock, serviceEnv: { CONDUIT_HERMES_PYTHON: python } }), {
    features: [
      createVoiceSessionsFeature({
        onCallEnd: (report) => {
          reports.push(report);
          for (const wake of wakers.splice(0)) wake();
        },
      }),
    ],
  });
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});
beforeEach(() => clock.advance(60_000));

describe("a saved call's end in Hermes", () => {
  it('fires on_session_end, gives the call to the memory provider, then finalizes — in that order', async () => {
    const saved = await save('mem', {
      call_id: 'call-a',
      title: 'Planning the trip',
      turns: [
        turn(0, 'assistant', 'Hi, what can I do?'),
        turn(1, 'user', 'Book the train'),
        turn(2, 'assistant', 'Booked the 9:10'),
        turn(3, 'user', 'And a seat by the window?'),
        turn(4, 'assistant', 'Done'),
        turn(5, 'user', 'Thanks, one more thing'),
      ],
    });
    expect(saved.status).toBe(200);
    const sessionId = saved.body.session_id as string;
    expect((await endOf(sessionId)).outcome).toBe('ended');
    const memoryHome = homeOf('mem');
    expect(hermesCalls('mem')).toEqual([
      {
        call: 'hook',
        hook: 'on_session_end',
        discovered: true,
        kwargs: {
          session_id: sessionId,
          completed: true,
          interrupted: false,
          model: 'gemini-live',
          platform: 'desktop',
          reason: 'voice_call_ended',
        },
      },
      {
        call: 'initialize',
        session_id: sessionId,
        kwargs: {
          platform: 'desktop',
          hermes_home: memoryHome,
          agent_context: 'primary',
          agent_identity: 'mem',
          agent_workspace: 'hermes',
          session_title: 'Planning the trip',
        },
        key: null,
        service_secret: null,
      },
      // Only whole exchanges: the greeting before the user spoke and the question the call ended on are not synced.
      { call: 'sync_turn', user: 'Book the train', assistant: 'Booked the 9:10', session_id: sessionId },
      { call: 'sync_turn', user: 'And a seat by the window?', assistant: 'Done', session_id: sessionId },
      { call: 'flush_pending', timeout: 30 },
      {
        call: 'provider_session_end',
        messages: [
          { role: 'assistant', content: 'Hi, what can I do?' },
          { role: 'user', content: 'Book the train' },
          { role: 'assistant', content: 'Booked the 9:10' },
          { role: 'user', content: 'And a seat by the window?' },
          { role: 'assistant', content: 'Done' },
          { role: 'user', content: 'Thanks, one more thing' },
        ],
      },
      { call: 'shutdown' },
      {
        call: 'hook',
        hook: 'on_session_finalize',
        discovered: true,
        kwargs: { session_id: sessionId, platform: 'desktop', reason: 'voice_call_ended' },
      },
    ]);
  });

  it("sends only a resumed call's new turns to memory", async () => {
    rmSync(path.join(homeOf('mem'), 'hermes-calls.jsonl'), { force: true });
    const first = await save('mem', {
      call_id: 'call-b',
      turns: [turn(0, 'user', 'Remind me of the plan'), turn(1, 'assistant', 'Train at 9:10')],
    });
    const sessionId = first.body.session_id as string;
    await endOf(sessionId);
    reports.length = 0;
    rmSync(path.join(homeOf('mem'), 'hermes-calls.jsonl'), { force: true });
    await save('mem', {
      call_id: 'call-b',
      session_id: sessionId,
      turns: [
        turn(0, 'user', 'Remind me of the plan'),
        turn(1, 'assistant', 'Train at 9:10'),
        turn(2, 'user', 'And back?'),
        turn(3, 'assistant', 'The 18:40'),
      ],
    });
    await endOf(sessionId);
    const synced = hermesCalls('mem').filter((entry) => entry.call === 'sync_turn');
    expect(synced).toEqual([{ call: 'sync_turn', user: 'And back?', assistant: 'The 18:40', session_id: sessionId }]);
  });

  it('runs only the memory step, under the chat session, for a call kept with a chat', async () => {
    rmSync(path.join(homeOf('mem'), 'hermes-calls.jsonl'), { force: true });
    await save('mem', {
      call_id: 'call-chat',
      chat_id: 'chat_typed',
      turns: [turn(0, 'user', 'Add eggs'), turn(1, 'assistant', 'Added')],
    });
    expect((await endOf('chat_typed')).outcome).toBe('ended');
    const calls = hermesCalls('mem');
    expect(calls.filter((entry) => entry.call === 'hook')).toEqual([]);
    expect(calls.filter((entry) => entry.call === 'sync_turn')).toEqual([
      { call: 'sync_turn', user: 'Add eggs', assistant: 'Added', session_id: 'chat_typed' },
    ]);
  });

  it('runs the hooks and skips memory without a provider', async () => {
    const saved = await save('plain', {
      call_id: 'call-c',
      turns: [turn(0, 'user', 'hello'), turn(1, 'assistant', 'hi')],
    });
    const sessionId = saved.body.session_id as string;
    expect((await endOf(sessionId)).outcome).toBe('ended');
    expect(hermesCalls('plain').map((entry) => entry.hook ?? entry.call)).toEqual([
      'on_session_end',
      'on_session_finalize',
    ]);
  });

  it('logs a failed step and still runs the rest', async () => {
    writeFileSync(path.join(homeOf('failing'), 'hooks-raise'), '');
    const saved = await save('failing', {
      call_id: 'call-d',
      turns: [turn(0, 'user', 'hello'), turn(1, 'assistant', 'hi')],
    });
    const sessionId = saved.body.session_id as string;
    expect((await endOf(sessionId)).outcome).toBe('ended_with_failures');
    // Both hooks raised and the provider's on_session_end raised; the provider was still shut down.
    expect(hermesCalls('failing').map((entry) => entry.call)).toEqual([
      'initialize',
      'sync_turn',
      'flush_pending',
      'provider_session_end',
      'shutdown',
    ]);
  });
});
