/**
 * Decisions (§3, routes 11–13) against a real relay process: scalar and batch answers, poll shapes,
 * release, legacy answers without gateway_id, sealed answers kept whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventId,
  pairHost,
  registerPhone,
  ROOMY_BUDGETS,
  startRelay,
  type Host,
  type Phone,
  type Relay,
} from './relay.js';

let relay: Relay;
let phone: Phone;
let host: Host;
let counter = 0;

beforeAll(async () => {
  relay = await startRelay(ROOMY_BUDGETS);
  phone = await registerPhone(relay);
  host = await pairHost(relay, phone);
});
afterAll(() => relay.stop());

/** Parks a clarify decision from `from` and returns its request id. */
async function park(from: Host, decision: Record<string, unknown> = {}, requestId?: string): Promise<string> {
  counter += 1;
  const id = requestId ?? `req-${process.pid}-${counter}-${Date.now()}`;
  const reply = await relay.call('POST', '/v1/events', {
    auth: from.auth,
    body: {
      type: 'input.needed',
      event_id: eventId(),
      decision: { kind: 'clarify', request_id: id, question: 'Which one?', choices: ['a', 'b'], ...decision },
    },
  });
  if (reply.status !== 202) throw new Error(`park failed: ${reply.status} ${reply.text}`);
  return id;
}

const respond = (id: string, body: unknown, auth = phone.auth, suffix = '/respond') =>
  relay.call('POST', `/v1/decisions/${id}${suffix}`, { auth, body });
const poll = (id: string, from: Host = host) => relay.call('GET', `/v1/decisions/${id}`, { auth: from.auth });
const release = (id: string, from: Host = host) => relay.call('DELETE', `/v1/decisions/${id}`, { auth: from.auth });

describe('scalar decisions', () => {
  it('pending → first answer wins (200 answered) → later answers 409 already_answered', async () => {
    const id = await park(host);
    expect((await poll(id)).json).toEqual({ status: 'pending', deliverable: true });
    const first = await respond(id, { answer: '  a\n', gateway_id: host.gatewayId });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ status: 'answered' });
    const second = await respond(id, { answer: 'b', gateway_id: host.gatewayId });
    expect(second.status).toBe(409);
    expect(second.json).toEqual({ error: 'already_answered' });
    expect((await poll(id)).json).toEqual({ status: 'answered', answer: 'a' });
  });

  it('POST /v1/decisions/:id is the same handler (legacy alias)', async () => {
    const id = await park(host);
    const reply = await respond(id, { answer: 'b' }, phone.auth, '');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ status: 'answered' });
    expect((await poll(id)).json).toEqual({ status: 'answered', answer: 'b' });
  });

  it('the device credential is checked before the body is read', async () => {
    const reply = await relay.call('POST', '/v1/decisions/abcd/respond', { raw: 'not json' });
    expect(reply.status).toBe(401);
    expect(reply.json).toEqual({ error: 'unauthorized' });
    expect((await respond('abcd', {}, host.auth)).status).toBe(401);
  });

  it.each([{}, { answer: '' }, { answer: ' \n\t ' }, { answer: 42 }, { answer: ['a'] }])(
    '%j is 400 invalid_answer',
    async (body) => {
      const id = await park(host);
      const reply = await respond(id, body);
      expect(reply.status).toBe(400);
      expect(reply.json).toEqual({ error: 'invalid_answer' });
    },
  );

  it('plain answers are cleaned to 2,000 characters; sealed e2e1 answers are kept whole', async () => {
    const plain = await park(host);
    await respond(plain, { answer: `x\u0001${'y'.repeat(3000)}` });
    expect((await poll(plain)).json).toEqual({ status: 'answered', answer: `x ${'y'.repeat(1998)}` });
    const sealedAnswer = `e2e1.${'0a'.repeat(16)}.${'N'.repeat(16)}.${'C'.repeat(8000)}`;
    const sealed = await park(host);
    expect((await respond(sealed, { answer: sealedAnswer })).status).toBe(200);
    expect((await poll(sealed)).json).toEqual({ status: 'answered', answer: sealedAnswer });
  });

  it('unknown ids: poll answers {status:"unknown"}, device answer 404 unknown_decision', async () => {
    expect((await poll('never-parked')).json).toEqual({ status: 'unknown' });
    const reply = await respond('never-parked', { answer: 'a' });
    expect(reply.status).toBe(404);
    expect(reply.json).toEqual({ error: 'unknown_decision' });
    const scoped = await respond('never-parked', { answer: 'a', gateway_id: host.gatewayId });
    expect(scoped.json).toEqual({ error: 'unknown_decision' });
  });
});

describe('batch decisions', () => {
  const questions = [
    { qid: 'q1', question: 'First?', choices: ['a', 'b'] },
    { qid: 'q2', question: 'Second?', choices: ['c'], multi_select: true },
  ];

  it('first answer wins per qid; a missing question_id targets the first qid; remaining comes back', async () => {
    const id = await park(host, { questions });
    expect((await poll(id)).json).toEqual({
      status: 'pending',
      deliverable: true,
      remaining: ['q1', 'q2'],
      answers: {},
    });
    const q2 = await respond(id, { answer: 'c', question_id: 'q2' });
    expect(q2.json).toEqual({ status: 'answered', remaining: ['q1'] });
    expect((await respond(id, { answer: 'again', question_id: 'q2' })).json).toEqual({ error: 'already_answered' });
    const unknown = await respond(id, { answer: 'x', question_id: 'q9' });
    expect(unknown.status).toBe(400);
    expect(unknown.json).toEqual({ error: 'invalid_question_id' });
    expect((await poll(id)).json).toEqual({
      status: 'pending',
      deliverable: true,
      remaining: ['q1'],
      answers: { q2: 'c' },
    });
    const q1 = await respond(id, { answer: 'a' });
    expect(q1.json).toEqual({ status: 'answered', remaining: [] });
    expect((await poll(id)).json).toEqual({ status: 'answered', answers: { q1: 'a', q2: 'c' }, remaining: [] });
  });

  it('qids are sanitised: reserved names and duplicates are dropped, first wins', async () => {
    const id = await park(host, {
      questions: [
        { qid: ' q1 ', question: 'One?' },
        { qid: '__proto__', question: 'Bad?' },
        { qid: 'q1', question: 'Dup?' },
        { qid: 'q 2', question: 'Space?' },
        { qid: 'q3', question: '' },
        { qid: 'q4', question: 'Four?' },
      ],
    });
    expect((await poll(id)).json).toEqual({
      status: 'pending',
      deliverable: true,
      remaining: ['q1', 'q4'],
      answers: {},
    });
  });
});

describe('release and scoping', () => {
  it('DELETE pending → cancelled (poll unknown, answer 410); repeated → cancelled; answered → already_completed', async () => {
    const id = await park(host);
    const first = await release(id);
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ status: 'cancelled' });
    expect((await poll(id)).json).toEqual({ status: 'unknown' });
    const late = await respond(id, { answer: 'a' });
    expect(late.status).toBe(410);
    expect(late.json).toEqual({ error: 'decision_released' });
    expect((await respond(id, { answer: 'a', gateway_id: host.gatewayId })).status).toBe(410);
    expect((await release(id)).json).toEqual({ status: 'cancelled' });
    const answered = await park(host);
    await respond(answered, { answer: 'a' });
    expect((await release(answered)).json).toEqual({ status: 'already_completed' });
    const missing = await release('never-parked');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ error: 'unknown_decision' });
  });

  it('the same request id from two gateways coexists; legacy answers resolve as §3 says', async () => {
    const other = await pairHost(relay, phone);
    const id = await park(host);
    await park(other, {}, id);
    // Another gateway sees its own record only.
    expect((await poll(id, other)).json).toEqual({ status: 'pending', deliverable: true });
    const ambiguous = await respond(id, { answer: 'a' });
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.json).toEqual({ error: 'ambiguous_decision' });
    expect((await respond(id, { answer: 'a', gateway_id: other.gatewayId })).status).toBe(200);
    expect((await poll(id)).json).toEqual({ status: 'pending', deliverable: true });
    // Exactly one live holder left: the legacy answer goes to it.
    expect((await respond(id, { answer: 'b' })).status).toBe(200);
    expect((await poll(id)).json).toEqual({ status: 'answered', answer: 'b' });
    expect((await poll(id, other)).json).toEqual({ status: 'answered', answer: 'a' });
    const settled = await respond(id, { answer: 'c' });
    expect(settled.status).toBe(409);
    expect(settled.json).toEqual({ error: 'already_answered' });
  });

  it('a legacy answer with no live holder but a released one is 410', async () => {
    const id = await park(host);
    await release(id);
    const reply = await respond(id, { answer: 'a' });
    expect(reply.status).toBe(410);
    expect(reply.json).toEqual({ error: 'decision_released' });
  });

  it('a foreign installation cannot see or answer the decision', async () => {
    const stranger = await registerPhone(relay);
    const id = await park(host);
    expect((await respond(id, { answer: 'a' }, stranger.auth)).json).toEqual({ error: 'unknown_decision' });
    expect((await poll(id)).json).toEqual({ status: 'pending', deliverable: true });
  });
});

describe('approval decisions (our extension: an approval card that names a request id)', () => {
  it('is parked as a scalar decision the phone answers once; a card without one parks nothing', async () => {
    counter += 1;
    const id = `appr-${process.pid}-${counter}-${Date.now()}`;
    const decision = { kind: 'approval', session_key: 'agent:main:cli:s1', description: 'rm -rf build' };
    const parked = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: {
        type: 'approval.needed',
        event_id: eventId(),
        decision: { ...decision, choices: ['once', 'deny'], request_id: id },
      },
    });
    expect(parked.status).toBe(202);
    expect((await poll(id)).json).toEqual({ status: 'pending', deliverable: true });
    expect((await respond(id, { answer: 'once', gateway_id: host.gatewayId })).json).toEqual({ status: 'answered' });
    expect((await respond(id, { answer: 'deny', gateway_id: host.gatewayId })).status).toBe(409);
    expect((await poll(id)).json).toEqual({ status: 'answered', answer: 'once' });

    // A malformed request id drops only the parking: the card still reaches the phone, without the id.
    const before = relay.captures().length;
    const plain = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: {
        type: 'approval.needed',
        event_id: eventId(),
        decision: { ...decision, choices: ['once'], request_id: 'not a request id' },
      },
    });
    expect(plain.status).toBe(202);
    const card = (relay.captures()[before]?.notification.payload as { body: { conduit: { decision: object } } }).body
      .conduit.decision;
    expect(card).toEqual({ ...decision, choices: ['once'] });
  });
});
