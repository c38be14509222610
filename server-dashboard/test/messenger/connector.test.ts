import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { MessengerConnector } from '../../src/messenger/connector.js';
import { silentLogger } from '../../src/messenger/clock.js';
import { HermesRunsBackend } from '../../src/messenger/hermes-runs-backend.js';
import { MessengerFatalError } from '../../src/messenger/errors.js';
import { chatHandle, envelope, inboundMessage } from './fakes/fake-relay.js';
import { HERMES_KEY, startFakes, waitFor, type Fakes } from './harness.js';

let fakes: Fakes;
let connector: MessengerConnector | null = null;

function start(extraEnv: Record<string, string> = {}): MessengerConnector {
  const config = fakes.config(extraEnv);
  connector = MessengerConnector.start({
    config,
    agent: new HermesRunsBackend({ baseUrl: fakes.hermes.url, apiKey: HERMES_KEY }),
    log: silentLogger,
  });
  return connector;
}

beforeEach(async () => {
  fakes = await startFakes();
});

afterEach(async () => {
  await connector?.stop();
  connector = null;
  await fakes.close();
});

describe('messenger connector against the fake Relay and Hermes', () => {
  it('an inbound message is committed before its ACK, read at intake, and answered once with a derived Idempotency-Key', async () => {
    const chatId = randomUUID();
    const ev = inboundMessage({ chatId, senderId: randomUUID(), text: 'hi there' });
    const c = start();
    const ackedBeforeCommit: bigint[] = [];
    fakes.relay['o'].onAck = (through) => {
      if (!c.inbox.hasDelivery(through)) ackedBeforeCommit.push(through);
    };
    fakes.relay.push(ev);
    await waitFor(() => fakes.relay.messages.size === 1, 30_000, 'reply');
    await waitFor(() => c.inbox.status(String(ev['event_id'])) === 'completed', 30_000, 'settled');
    expect(ackedBeforeCommit).toEqual([]);
    expect(fakes.relay.acks.map((a) => a.through)).toEqual([1n]);
    const [sent] = [...fakes.relay.messages.values()];
    expect(sent?.idempotencyKey).toBe(`reply-${String(ev['event_id'])}-0`);
    expect(sent?.body).toEqual({ message: { parts: [{ type: 'text', value: 'echo: hi there' }] } });
    expect(fakes.relay.reads).toEqual([chatId]);
    expect(fakes.relay.upgrades[0]?.authorization).toBe('Bearer relay-agent-token-for-tests');
    expect(fakes.hermes.createdRuns).toHaveLength(1);
    expect(fakes.hermes.createdRuns[0]?.key).toBe(`relay-turn-${String(ev['event_id'])}`);
    await waitFor(() => fakes.relay.typing.some((t) => t.op === 'stop'), 30_000, 'typing stop');
    expect(fakes.relay.typing[0]).toEqual({ chatId, op: 'start' });
    expect(fakes.relay.contractViolations).toEqual([]);
  });

  it('a replayed event is deduplicated by event_id and still acknowledged', async () => {
    const chatId = randomUUID();
    const ev = inboundMessage({ chatId, senderId: randomUUID(), text: 'once' });
    fakes.relay.ignoreAcks = true;
    const c = start();
    fakes.relay.push(ev);
    await waitFor(() => fakes.relay.acks.length === 1, 30_000, 'first ack');
    // Relay never recorded the ACK: on the next connection it replays sequence 1.
    fakes.relay.ignoreAcks = false;
    fakes.relay.closeAll(1012, 'restart');
    await waitFor(() => fakes.relay.acks.length === 2, 30_000, 'ack of the replay');
    expect(fakes.relay.acks.map((a) => a.through)).toEqual([1n, 1n]);
    expect(fakes.relay.acks[0]?.connection).not.toBe(fakes.relay.acks[1]?.connection);
    await waitFor(() => c.inbox.status(String(ev['event_id'])) === 'completed', 30_000, 'settled');
    expect(fakes.hermes.createdRuns).toHaveLength(1);
    expect(fakes.relay.messages.size).toBe(1);
    expect(c.inbox.backlog().completed).toBe(1);
  });

  it('non-message events are committed and acknowledged but never start a turn; message.failed is logged', async () => {
    const chatId = randomUUID();
    const c = start();
    fakes.relay.push(
      envelope('message.failed', { chat: { id: chatId }, id: randomUUID(), error: 'x' }),
      envelope('chat.typing_indicator.started', { chat_id: chatId }),
      envelope('location.sharing.started', { chat_id: chatId }),
      { ...inboundMessage({ chatId, senderId: randomUUID() }), event_type: 'message.sent' },
    );
    await waitFor(() => c.inbox.backlog().ignored === 4, 30_000, 'ignored');
    await waitFor(() => fakes.relay.acks.at(-1)?.through === 4n, 30_000, 'ack 4');
    expect(fakes.hermes.createdRuns).toHaveLength(0);
    expect(fakes.relay.reads).toEqual([]);
  });

  it('senders outside RELAY_ALLOWED_CONTACTS and unaddressed group messages are ignored without Read', async () => {
    const allowed = randomUUID();
    const c = start({ RELAY_ALLOWED_CONTACTS: allowed });
    const dm = randomUUID();
    const group = randomUUID();
    fakes.relay.push(
      inboundMessage({ chatId: dm, senderId: randomUUID(), text: 'stranger' }),
      inboundMessage({ chatId: group, senderId: allowed, isGroup: true, text: '@hermes typed, not a mention' }),
      inboundMessage({
        chatId: group,
        senderId: allowed,
        isGroup: true,
        parts: [{ type: 'text', value: 'hey @Hermes', mention: '@HERMES', reactions: null }],
      }),
    );
    await waitFor(() => c.inbox.backlog().completed === 1 && c.inbox.backlog().ignored === 2, 30_000, 'intake');
    expect(fakes.hermes.createdRuns.map((r) => r.input)).toEqual(['hey @Hermes']);
    expect(fakes.relay.reads).toEqual([group]);
    // Group answers always quote the message they answer (reply_to auto).
    const [sent] = [...fakes.relay.messages.values()];
    expect((sent?.body['message'] as Record<string, unknown>)['reply_to']).toBeDefined();
  });

  it("a group reply to one of the agent's own messages addresses the agent", async () => {
    const group = randomUUID();
    const own = randomUUID();
    fakes.relay.ownMessages.set(own, {
      id: own,
      chat_id: group,
      is_from_me: true,
      is_system_message: false,
      delivery_status: 'delivered',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      parts: [{ type: 'text', value: 'earlier', reactions: null }],
    });
    const c = start();
    fakes.relay.push(
      inboundMessage({
        chatId: group,
        senderId: randomUUID(),
        isGroup: true,
        text: 'yes',
        replyTo: { message_id: own },
      }),
    );
    await waitFor(() => c.inbox.backlog().completed === 1, 30_000, 'turn');
    expect(fakes.relay.contractViolations).toEqual([]);
  });

  it('a failed turn returns the event to pending and a later attempt answers it, checkpoint unchanged', async () => {
    let attempts = 0;
    fakes.hermes.script = async (run, ctl) => {
      attempts += 1;
      if (attempts === 1) ctl.emit('run.failed', { error: 'model overloaded' });
      else ctl.emit('run.completed', { output: 'second time lucky' });
    };
    const c = start();
    const ev = inboundMessage({ chatId: randomUUID(), senderId: randomUUID() });
    fakes.relay.push(ev);
    await waitFor(() => c.inbox.status(String(ev['event_id'])) === 'completed', 30_000, 'retry');
    expect(attempts).toBe(2);
    // The failed run is not replayed: the retry is a new run under a new key.
    expect(fakes.hermes.createdRuns.map((r) => r.key)).toEqual([
      `relay-turn-${String(ev['event_id'])}`,
      `relay-turn-${String(ev['event_id'])}-retry-1`,
    ]);
    expect(c.inbox.checkpoint()).toBe(1n);
    expect([...fakes.relay.messages.values()].map((m) => m.body)).toEqual([
      { message: { parts: [{ type: 'text', value: 'second time lucky' }] } },
    ]);
  });

  it('a turn outlasting the shutdown grace is left to replay on the next start: one reply, no retry logged', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let runs = 0;
    fakes.hermes.script = async (run, ctl) => {
      runs += 1;
      if (runs === 1) await held;
      ctl.emit('run.completed', { output: `answer to ${run.input}` });
    };
    const lines: string[] = [];
    const log = {
      info: (msg: string) => lines.push(`info ${msg}`),
      warn: (msg: string) => lines.push(`warn ${msg}`),
      error: (msg: string) => lines.push(`error ${msg}`),
    };
    const agent = new HermesRunsBackend({ baseUrl: fakes.hermes.url, apiKey: HERMES_KEY });
    const first = MessengerConnector.start({ config: fakes.config(), agent, log });
    const ev = inboundMessage({ chatId: randomUUID(), senderId: randomUUID(), text: 'slow one' });
    fakes.relay.push(ev);
    await waitFor(() => fakes.hermes.createdRuns.length === 1, 30_000, 'the run');
    await first.stop(); // waits out the 5 s grace with the run still going, then closes the inbox
    release();
    await waitFor(() => lines.some((l) => l.includes('interrupted by shutdown')), 10_000, 'the shutdown note');
    expect(lines.filter((l) => l.startsWith('warn') || l.startsWith('error'))).toEqual([]);
    // The next start replays the turn under the same keys: Relay holds one reply.
    connector = start();
    const c = connector;
    await waitFor(() => c.inbox.status(String(ev['event_id'])) === 'completed', 30_000, 'replayed');
    expect(fakes.relay.messages.size).toBe(1);
    expect(new Set(fakes.hermes.createdRuns.map((r) => r.key))).toEqual(
      new Set([`relay-turn-${String(ev['event_id'])}`]),
    );
  }, 60_000);

  it('a tool approval is asked in the chat and answered by /approve always', async () => {
    fakes.hermes.script = async (run, ctl) => {
      ctl.emit('approval.request', {
        request_id: 'req-1',
        command: 'rm -rf /tmp/x',
        description: 'dangerous command',
        choices: [],
      });
      const answer = await ctl.nextApproval();
      ctl.emit('run.completed', { output: `approved with ${String(answer['choice'])}` });
    };
    const chatId = randomUUID();
    const sender = randomUUID();
    const c = start();
    fakes.relay.push(inboundMessage({ chatId, senderId: sender, text: 'clean up' }));
    await waitFor(() => fakes.relay.messages.size === 1, 30_000, 'approval prompt');
    const prompt = [...fakes.relay.messages.values()][0];
    expect(JSON.stringify(prompt?.body)).toContain('/approve always');
    fakes.relay.push(inboundMessage({ chatId, senderId: sender, text: '/approve always' }));
    await waitFor(() => fakes.relay.messages.size === 2, 30_000, 'final answer');
    const final = [...fakes.relay.messages.values()][1];
    expect(final?.body).toEqual({ message: { parts: [{ type: 'text', value: 'approved with always' }] } });
    expect(fakes.hermes.createdRuns).toHaveLength(1);
    expect(fakes.hermes.createdRuns[0]?.approvals).toEqual([{ choice: 'always', request_id: 'req-1' }]);
    await waitFor(() => c.inbox.backlog().completed === 2, 30_000, 'both settled');
  });

  it('answers with components, links and silence are shaped into valid Relay messages', async () => {
    const outputs = [
      'Pick one:\n\n```buttons\n[{"label":"Yes"},{"label":"No"}]\n```',
      'Here it is\n\nhttps://example.com/page',
      '[SILENT]',
    ];
    let n = 0;
    fakes.hermes.script = async (_run, ctl) => {
      ctl.emit('run.completed', { output: outputs[n++] ?? '' });
    };
    const chatId = randomUUID();
    const sender = randomUUID();
    const c = start();
    for (let i = 0; i < 3; i++) fakes.relay.push(inboundMessage({ chatId, senderId: sender, text: `q${i}` }));
    await waitFor(() => c.inbox.backlog().completed === 3, 30_000, 'turns');
    const bodies = [...fakes.relay.messages.values()].map((m) => m.body['message']);
    expect(bodies).toEqual([
      {
        parts: [
          { type: 'text', value: 'Pick one:' },
          { type: 'buttons', items: [{ label: 'Yes' }, { label: 'No' }] },
        ],
      },
      { parts: [{ type: 'text', value: 'Here it is' }] },
      { parts: [{ type: 'link', value: 'https://example.com/page' }] },
    ]);
    expect(fakes.relay.contractViolations).toEqual([]);
  });

  it('a reaction from an allowed contact reaches a backend with a reaction handler; own reactions are ignored', async () => {
    const { ScriptedAgentBackend } = await import('../../src/messenger/scripted-agent.js');
    const agent = new ScriptedAgentBackend();
    connector = MessengerConnector.start({ config: fakes.config(), agent, log: silentLogger });
    const reaction = (isFromMe: boolean) =>
      envelope('reaction.added', {
        chat_id: randomUUID(),
        from_handle: chatHandle(randomUUID(), 'alice'),
        message_id: randomUUID(),
        part_index: 0,
        reaction_type: 'custom',
        custom_emoji: '👍',
        is_from_me: isFromMe,
        reacted_at: '2026-01-01T00:00:00.000Z',
      });
    fakes.relay.push(reaction(false), reaction(true));
    await waitFor(
      () => connector?.inbox.backlog().ignored === 1 && connector.inbox.backlog().completed === 1,
      5_000,
      'reactions',
    );
    expect(agent.reactions).toHaveLength(1);
    expect(agent.reactions[0]).toMatchObject({
      platform: 'relayapp',
      event_name: 'reaction:added',
      reaction: '👍',
      item_type: 'message',
    });
  });

  it('a 409 upgrade (saved webhook subscription) stops with a message telling the user to remove it', async () => {
    fakes.relay.upgradeStatus = 409;
    const c = start();
    const err = await c.done.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MessengerFatalError);
    expect((err as MessengerFatalError).code).toBe('relay_webhook_configured');
    expect((err as Error).message).toMatch(/delete its webhook subscription/);
    expect(fakes.relay.upgrades).toHaveLength(1);
  });
});
