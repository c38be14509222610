/**
 * Who may answer a pending dangerous-command approval (issue 12, item 10), end to end: the real
 * connector against the fake Relay server (requests checked against the locked snapshot) and the
 * scripted agent, which records every approve call it receives.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { MessengerConnector } from '../../src/messenger/connector.js';
import { silentLogger } from '../../src/messenger/clock.js';
import { APPROVAL_REFUSAL_TEXT } from '../../src/messenger/approvals.js';
import { ScriptedAgentBackend, type TurnScript } from '../../src/messenger/scripted-agent.js';
import { inboundMessage } from './fakes/fake-relay.js';
import { startFakes, waitFor, type Fakes } from './harness.js';

type Json = Record<string, unknown>;

let fakes: Fakes;
let connector: MessengerConnector | null = null;

/** Asks for one approval, then completes with the answer it got. */
const asksApproval: TurnScript = async function* (_request, approvals) {
  yield { kind: 'approval', requestId: 'req-1', command: 'rm -rf /tmp/x', description: 'dangerous command' };
  for await (const choice of approvals) {
    yield { kind: 'completed', output: `approved with ${choice}` };
    return;
  }
};

function start(agent: ScriptedAgentBackend, env: Record<string, string> = {}): MessengerConnector {
  connector = MessengerConnector.start({ config: fakes.config(env), agent, log: silentLogger });
  return connector;
}

function sentByKey(key: string): { id: string; chatId: string; body: Json } | undefined {
  return [...fakes.relay.messages.values()].find((m) => m.idempotencyKey === key);
}

function textOf(body: Json | undefined): unknown {
  const message = body?.['message'] as { parts?: Json[] } | undefined;
  return message?.parts?.[0]?.['value'];
}

/**
 * Starts a group turn from `requester` (addressed by a structured mention) and waits for its
 * approval prompt. The prompt is then served as one of the agent's own messages, so group members
 * answer it the way Relay people do under the default `mentions` policy: by replying to it.
 */
async function groupTurnWaitingForApproval(requester: string): Promise<{ chatId: string; promptId: string }> {
  const chatId = randomUUID();
  const ev = inboundMessage({
    chatId,
    senderId: requester,
    isGroup: true,
    parts: [{ type: 'text', value: '@hermes clean up /tmp/x', mention: '@hermes', reactions: null }],
  });
  fakes.relay.push(ev);
  const prompt = await waitFor(() => sentByKey(`reply-${String(ev['event_id'])}-0`), 30_000, 'approval prompt');
  expect(textOf(prompt.body)).toContain('/approve always');
  fakes.relay.ownMessages.set(prompt.id, {
    id: prompt.id,
    chat_id: chatId,
    is_from_me: true,
    is_system_message: false,
    delivery_status: 'delivered',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    parts: [{ type: 'text', value: String(textOf(prompt.body)), reactions: null }],
  });
  return { chatId, promptId: prompt.id };
}

function answer(chatId: string, senderId: string, text: string, promptId?: string): Json {
  return inboundMessage({
    chatId,
    senderId,
    isGroup: promptId !== undefined,
    text,
    ...(promptId !== undefined ? { replyTo: { message_id: promptId } } : {}),
  });
}

beforeEach(async () => {
  fakes = await startFakes();
});

afterEach(async () => {
  await connector?.stop();
  connector = null;
  await fakes.close();
});

describe('answering a pending approval', () => {
  it("in a group, another member's /approve is refused with a reply and never reaches the agent; the requester's later /approve does", async () => {
    const agent = new ScriptedAgentBackend(asksApproval);
    const c = start(agent);
    const requester = randomUUID();
    const other = randomUUID();
    const { chatId, promptId } = await groupTurnWaitingForApproval(requester);

    const intruder = answer(chatId, other, '/approve always', promptId);
    const intruderId = String(intruder['event_id']);
    fakes.relay.push(intruder);
    const settled = await waitFor(
      () => {
        const status = c.inbox.status(intruderId);
        return status === 'completed' || status === 'ignored' ? status : null;
      },
      30_000,
      'the refused answer settled',
    );
    expect(agent.approvals).toEqual([]);
    expect(settled).toBe('ignored');
    expect(c.inbox.reason(intruderId)).toMatch(/neither the requester nor an admin/);
    const refusal = sentByKey(`reply-${intruderId}-0`);
    expect(refusal?.chatId).toBe(chatId);
    expect(refusal?.body).toEqual({
      message: {
        parts: [{ type: 'text', value: APPROVAL_REFUSAL_TEXT }],
        reply_to: { message_id: (intruder['data'] as Json)['id'] },
      },
    });
    // The refused answer started no turn of its own: the one turn still waits on its approval.
    expect(agent.turns).toHaveLength(1);

    const real = answer(chatId, requester, '/approve', promptId);
    fakes.relay.push(real);
    await waitFor(() => c.inbox.status(String(real['event_id'])) === 'completed', 30_000, "the requester's answer");
    await waitFor(() => c.inbox.backlog().completed === 2, 30_000, 'the turn settled');
    expect(agent.approvals).toEqual([{ runId: 'run_1', choice: 'once', requestId: 'req-1' }]);
    const bodies = [...fakes.relay.messages.values()].map((m) => textOf(m.body));
    expect(bodies).toContain('approved with once');
    expect(agent.turns).toHaveLength(1);
    expect(fakes.relay.contractViolations).toEqual([]);
  });

  it('in a group, an admin named in allow_admin_from answers for the requester', async () => {
    const agent = new ScriptedAgentBackend(asksApproval);
    const admin = randomUUID();
    const c = start(agent, { RELAY_ALLOW_ADMIN_FROM: `someone-else, ${admin}` });
    const { chatId, promptId } = await groupTurnWaitingForApproval(randomUUID());
    const ev = answer(chatId, admin, '/deny', promptId);
    fakes.relay.push(ev);
    await waitFor(() => agent.approvals.length === 1, 30_000, "the admin's answer");
    expect(agent.approvals).toEqual([{ runId: 'run_1', choice: 'deny', requestId: 'req-1' }]);
    await waitFor(() => c.inbox.backlog().completed === 2, 30_000, 'the turn settled');
    expect(c.inbox.backlog().ignored).toBe(0);
    expect([...fakes.relay.messages.values()].map((m) => textOf(m.body))).toContain('approved with deny');
  });

  it('in a direct chat the person answers as before, with no admins configured', async () => {
    const agent = new ScriptedAgentBackend(asksApproval);
    const c = start(agent);
    const chatId = randomUUID();
    const person = randomUUID();
    const ev = inboundMessage({ chatId, senderId: person, text: 'clean up /tmp/x' });
    fakes.relay.push(ev);
    await waitFor(() => sentByKey(`reply-${String(ev['event_id'])}-0`), 30_000, 'approval prompt');
    fakes.relay.push(answer(chatId, person, '/approve session'));
    await waitFor(() => c.inbox.backlog().completed === 2, 30_000, 'answer and turn settled');
    expect(agent.approvals).toEqual([{ runId: 'run_1', choice: 'session', requestId: 'req-1' }]);
    expect(c.inbox.backlog().ignored).toBe(0);
    expect([...fakes.relay.messages.values()].map((m) => textOf(m.body))).toContain('approved with session');
  });
});
