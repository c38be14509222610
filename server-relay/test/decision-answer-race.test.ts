/**
 * "First answer wins" holds under simultaneous answers (issue 12, item 10b): the store writes an
 * answer with one conditional statement, so of many answers sent at once exactly one is taken and the
 * others get 409 already_answered, a batch keeps one answer per qid and loses none, and a release
 * racing answers never writes over one. The real relay app on an ephemeral port, on SQLite and on
 * PostgreSQL. On PostgreSQL one process interleaves the answers' reads and writes (the code before
 * the change let every one of them win); on SQLite better-sqlite3 answers synchronously, so one
 * process never interleaves them and the SQLite run pins the same outcome rather than the race.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextIp, paired, ROOMY_BUDGETS, STORE_KINDS, startRelay, testDatabase, type Relay } from './support/harness.js';

const RACERS = 24;
let eventSeq = 0;

describe.each(STORE_KINDS)('simultaneous decision answers on %s', (kind) => {
  let db: { url: string; release: () => Promise<void> };
  let relay: Relay;

  beforeAll(async () => {
    db = await testDatabase(kind);
    relay = await startRelay(db.url, ROOMY_BUDGETS);
  }, 120_000);
  afterAll(async () => {
    await relay?.close();
    await db?.release();
  });

  /** A phone and host with one parked clarify decision. */
  async function parked(requestId: string, questions?: { qid: string; question: string; choices: string[] }[]) {
    const pair = await paired(relay);
    eventSeq += 1;
    const sent = await relay.client.POST('/v1/events', {
      headers: pair.gatewayAuth,
      body: {
        type: 'input.needed',
        event_id: `evt-race-${kind}-${eventSeq}`,
        decision: { kind: 'clarify', request_id: requestId, question: 'Which one?', choices: ['A', 'B'], questions },
      } as never,
    });
    expect(sent.response.status).toBe(202);
    return pair;
  }

  /** Sends every answer at once, each from its own address (the per-address window stays out of the way). */
  function answerAll(pair: Awaited<ReturnType<typeof parked>>, requestId: string, bodies: Record<string, unknown>[]) {
    return Promise.all(
      bodies.map((body) =>
        relay.client.POST('/v1/decisions/{id}/respond', {
          params: { path: { id: requestId } },
          headers: { ...pair.deviceAuth, 'x-forwarded-for': nextIp() },
          body: { gateway_id: pair.gatewayId, ...body } as never,
        }),
      ),
    );
  }

  async function poll(pair: Awaited<ReturnType<typeof parked>>, requestId: string) {
    const { data } = await relay.client.GET('/v1/decisions/{id}', {
      params: { path: { id: requestId } },
      headers: pair.gatewayAuth,
    });
    return data as Record<string, unknown>;
  }

  it(`${RACERS} simultaneous answers to a scalar decision: exactly one wins, the others get 409 already_answered`, async () => {
    const pair = await parked('req-race-scalar');
    const replies = await answerAll(
      pair,
      'req-race-scalar',
      Array.from({ length: RACERS }, (_, i) => ({ answer: `answer ${i}` })),
    );
    const winners = replies.flatMap((reply, i) => (reply.response.status === 200 ? [i] : []));
    expect(winners).toHaveLength(1);
    for (const reply of replies.filter((r) => r.response.status !== 200)) {
      expect(reply.response.status).toBe(409);
      expect(reply.error).toEqual({ error: 'already_answered' });
    }
    expect(await poll(pair, 'req-race-scalar')).toEqual({ status: 'answered', answer: `answer ${winners[0]}` });
  });

  it('simultaneous answers to a batch: one winner per qid, and no qid’s answer is lost', async () => {
    const qids = ['q1', 'q2', 'q3', 'q4'];
    const pair = await parked(
      'req-race-batch',
      qids.map((qid) => ({ qid, question: `${qid}?`, choices: ['x', 'y'] })),
    );
    const bodies = Array.from({ length: RACERS }, (_, i) => ({ question_id: qids[i % qids.length], answer: `a${i}` }));
    const replies = await answerAll(pair, 'req-race-batch', bodies);
    const winners = new Map<string, string>();
    replies.forEach((reply, i) => {
      const body = bodies[i]!;
      if (reply.response.status === 200) {
        expect(winners.has(String(body.question_id)), `second winner for ${body.question_id}`).toBe(false);
        winners.set(String(body.question_id), body.answer);
      } else {
        expect(reply.response.status).toBe(409);
        expect(reply.error).toEqual({ error: 'already_answered' });
      }
    });
    expect([...winners.keys()].sort()).toEqual(qids);
    expect(await poll(pair, 'req-race-batch')).toEqual({
      status: 'answered',
      answers: Object.fromEntries(winners),
      remaining: [],
    });
  });

  it('a release racing answers either lands first (answers 410) or finds one answer in (already_completed)', async () => {
    const pair = await parked('req-race-release');
    const [released, ...replies] = await Promise.all([
      relay.client.DELETE('/v1/decisions/{id}', {
        params: { path: { id: 'req-race-release' } },
        headers: pair.gatewayAuth,
      }),
      ...Array.from({ length: 8 }, (_, i) =>
        relay.client.POST('/v1/decisions/{id}/respond', {
          params: { path: { id: 'req-race-release' } },
          headers: { ...pair.deviceAuth, 'x-forwarded-for': nextIp() },
          body: { gateway_id: pair.gatewayId, answer: `late ${i}` },
        }),
      ),
    ]);
    const statuses = replies.map((reply) => reply.response.status);
    const state = await poll(pair, 'req-race-release');
    if (released.data?.status === 'cancelled') {
      // The release was first: nothing was answered, every answer learned the decision was released.
      expect(statuses.filter((status) => status === 200)).toHaveLength(0);
      expect(new Set(statuses)).toEqual(new Set([410]));
      expect(state).toEqual({ status: 'unknown' });
    } else {
      expect(released.data).toEqual({ status: 'already_completed' });
      const winner = statuses.indexOf(200);
      expect(statuses.filter((status) => status === 200)).toHaveLength(1);
      expect(statuses.filter((status) => status !== 200).every((status) => status === 409 || status === 410)).toBe(
        true,
      );
      expect(state).toEqual({ status: 'answered', answer: `late ${winner}` });
    }
  });
});
