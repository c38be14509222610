/**
 * What one process holds only while a request waits — rings and their sessions, decisions, Watch
 * grants with their held calls and polls, audio bridges — seen across three replicas (issue 22 item
 * 2): each test starts an exchange on one replica and finishes it on another, so it fails if that
 * piece were per process.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deviceToken, eventId, ROOMY_BUDGETS, type CapturedPush } from '../conformance/relay.js';
import { audioMessage, open } from '../watch/ws-clients.js';
import { connectTestRedis, waitFor } from './cluster.js';
import { clusterForFile, messagesOf, openGrant, pairedPhone, wsUrl, type Caller } from './fixtures.js';

const { cluster, one, two, three } = clusterForFile({ replicas: 3, env: ROOMY_BUDGETS });

interface RingTicket {
  id: string;
  token: string;
}

/** A call.requested through `on` to a phone with a Watch: the ring both pushes carry. */
async function ringThrough(on: Caller): Promise<{ ticket: RingTicket; phoneVoip: string }> {
  const phoneVoip = deviceToken();
  const phone = await pairedPhone(on, on, { voip_token: phoneVoip, watch_voip_token: deviceToken() });
  const before = cluster.captures().length;
  const reply = await on.call('POST', '/v1/events', {
    auth: phone.gateway,
    body: {
      type: 'call.requested',
      event_id: eventId('ring'),
      session_id: 'sess-1',
      profile: 'p',
      call: { id: 'call-abcdef01', kind: 'question', session_ids: ['sess-1'], title: 'T', reason: 'R' },
    },
  });
  expect(reply.status, reply.text).toBe(202);
  const push = cluster
    .captures()
    .slice(before)
    .find((captured) => captured.deviceToken === phoneVoip) as CapturedPush;
  const { ring } = push.notification.payload.conduit as { ring: RingTicket };
  return { ticket: ring, phoneVoip };
}

describe('rings and ring sessions are shared', () => {
  it('a ring made on replica 1 is settled on replica 2; replica 3 answers 409 with the settlement', async () => {
    const { ticket, phoneVoip } = await ringThrough(one);
    const before = cluster.captures().length;
    const settled = await two.call('POST', `/v1/rings/${ticket.id}/settled`, {
      body: { token: ticket.token, by: 'watch', outcome: 'answered' },
    });
    expect(settled.status, settled.text).toBe(200);
    expect(settled.json).toEqual({ settled: true, notified: true });
    // The stop push went to the phone, once.
    const stops = cluster
      .captures()
      .slice(before)
      .filter((push) => push.deviceToken === phoneVoip);
    expect(stops.map((push) => push.notification.payload)).toEqual([
      { aps: {}, conduit: { ring: { id: ticket.id, settled: 'answered', by: 'watch' } } },
    ]);
    const again = await three.call('POST', `/v1/rings/${ticket.id}/settled`, {
      body: { token: ticket.token, by: 'phone', outcome: 'declined' },
    });
    expect(again.status).toBe(409);
    expect(again.json).toEqual({ error: 'already_settled', settled: { by: 'watch', outcome: 'answered' } });
    // A wrong token is still the same 404 on every replica.
    const wrong = await one.call('POST', `/v1/rings/${ticket.id}/settled`, {
      body: { token: 'Z'.repeat(43), by: 'phone', outcome: 'declined' },
    });
    expect(wrong.status).toBe(404);
  });

  it('of settles racing on three replicas exactly one wins', async () => {
    const { ticket } = await ringThrough(two);
    const replies = await Promise.all(
      [one, two, three, one, two, three].map((on, i) =>
        on.call('POST', `/v1/rings/${ticket.id}/settled`, {
          body: { token: ticket.token, by: i % 2 === 0 ? 'phone' : 'watch', outcome: 'declined' },
        }),
      ),
    );
    expect(replies.map((reply) => reply.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
  });

  it('a Watch waiting for the session on replica 2 gets it when the phone stores it on replica 3', async () => {
    const { ticket } = await ringThrough(one);
    const settled = await one.call('POST', `/v1/rings/${ticket.id}/settled`, {
      body: { token: ticket.token, by: 'watch', outcome: 'answered', start: 'St4rt_-' },
    });
    expect(settled.status).toBe(200);
    const session = `/v1/rings/${ticket.id}/session`;
    const waiting = two.call('GET', `${session}?wait=15`, { auth: `Bearer ${ticket.token}` });
    const second = one.call('GET', `${session}?wait=15`, { auth: `Bearer ${ticket.token}` });
    // Both waiters are counted relay-wide (the counter in Redis reaches 2); a third, on another
    // replica, is refused busy.
    const redis = await connectTestRedis();
    try {
      await waitFor(
        async () => (await redis.get(`${cluster.keyPrefix}ring-session-waiters:${ticket.id}`)) === '2',
        'two waiters counted',
      );
    } finally {
      redis.disconnect();
    }
    const third = await three.call('GET', `${session}?wait=1`, { auth: `Bearer ${ticket.token}` });
    expect(third.status).toBe(409);
    expect(third.json).toEqual({ error: 'busy' });
    const sealed = randomBytes(60_000).toString('base64url');
    const stored = await three.call('PUT', session, { body: { token: ticket.token, sealed } });
    expect(stored.status, stored.text).toBe(200);
    for (const fetched of [await waiting, await second]) {
      expect(fetched.status).toBe(200);
      expect(fetched.json).toEqual({ sealed });
    }
    // Stored: an immediate fetch on any replica gets it too.
    const later = await one.call('GET', session, { auth: `Bearer ${ticket.token}` });
    expect(later.json).toEqual({ sealed });
  });
});

describe('decisions are shared', () => {
  it('an answer posted on replica 2 is what the host polling replica 3 gets; replica 1 refuses a second', async () => {
    const phone = await pairedPhone(one, one);
    const requestId = `req-cluster-${Date.now()}`;
    const parked = await one.call('POST', '/v1/events', {
      auth: phone.gateway,
      body: {
        type: 'input.needed',
        event_id: eventId('decision'),
        decision: { kind: 'clarify', request_id: requestId, question: 'Which?', choices: ['a', 'b'] },
      },
    });
    expect(parked.status, parked.text).toBe(202);
    expect((await three.call('GET', `/v1/decisions/${requestId}`, { auth: phone.gateway })).json).toEqual({
      status: 'pending',
      deliverable: true,
    });
    const answered = await two.call('POST', `/v1/decisions/${requestId}/respond`, {
      auth: phone.device,
      body: { answer: 'b', gateway_id: phone.gatewayId },
    });
    expect(answered.status, answered.text).toBe(200);
    expect((await three.call('GET', `/v1/decisions/${requestId}`, { auth: phone.gateway })).json).toEqual({
      status: 'answered',
      answer: 'b',
    });
    const second = await one.call('POST', `/v1/decisions/${requestId}/respond`, {
      auth: phone.device,
      body: { answer: 'a', gateway_id: phone.gatewayId },
    });
    expect(second.status).toBe(409);
    expect(second.json).toEqual({ error: 'already_answered' });
  });
});

const sealed = () => ({ n: randomBytes(12).toString('base64url'), ct: randomBytes(64).toString('base64url') });

describe('Watch tool grants are shared', () => {
  it("the Watch's call on replica 3 reaches the host polling replica 2, and the answer posted on replica 1 goes back", async () => {
    const phone = await pairedPhone(one, two);
    const grant = await openGrant(one, phone.gateway);
    const polling = two.call('GET', `/v1/watch-tools/grants/${grant.gid}/calls?wait_ms=20000`, {
      auth: phone.gateway,
    });
    const call = { rid: randomBytes(16).toString('base64url'), ...sealed() };
    const calling = three.call('POST', `/v1/watch-tools/grants/${grant.gid}/calls`, { auth: grant.watch, body: call });
    const polled = await polling;
    expect(polled.status, polled.text).toBe(200);
    expect(polled.json).toEqual({ calls: [call] });
    const result = sealed();
    const posted = await one.call('POST', `/v1/watch-tools/grants/${grant.gid}/results/${call.rid}`, {
      auth: phone.gateway,
      body: result,
    });
    expect(posted.status, posted.text).toBe(200);
    expect(posted.json).toEqual({ status: 'delivered' });
    const answered = await calling;
    expect(answered.status, answered.text).toBe(200);
    expect(answered.json).toEqual(result);
    // The rid is spent relay-wide.
    const replay = await two.call('POST', `/v1/watch-tools/grants/${grant.gid}/calls`, {
      auth: grant.watch,
      body: call,
    });
    expect(replay.status).toBe(409);
    expect(replay.json).toEqual({ error: 'duplicate_call' });
  });

  it('the Watch closing the grant on replica 2 answers the host poll held on replica 3 with 410 reason watch', async () => {
    const phone = await pairedPhone(two, three);
    const grant = await openGrant(three, phone.gateway);
    const polling = three.call('GET', `/v1/watch-tools/grants/${grant.gid}/calls?wait_ms=20000`, {
      auth: phone.gateway,
    });
    // The poll is held (a newer one would answer it): close only once the first is surely waiting.
    await waitFor(async () => {
      const probe = await one.call('GET', `/v1/watch-tools/grants/${grant.gid}/calls?wait_ms=0`, {
        auth: phone.gateway,
      });
      return probe.status === 200;
    }, 'the grant known on replica 1');
    const held = two.call('GET', `/v1/watch-tools/grants/${grant.gid}/calls?wait_ms=20000`, { auth: phone.gateway });
    expect((await polling).json).toEqual({ calls: [] });
    const closed = await two.call('DELETE', `/v1/watch-tools/grants/${grant.gid}`, { auth: grant.watch });
    expect(closed.status).toBe(204);
    const answer = await held;
    expect(answer.status).toBe(410);
    expect(answer.json).toEqual({ error: 'grant_closed', reason: 'watch' });
    const later = await one.call('POST', `/v1/watch-tools/grants/${grant.gid}/calls`, {
      auth: grant.watch,
      body: { rid: randomBytes(16).toString('base64url'), ...sealed() },
    });
    expect(later.status).toBe(410);
    expect(later.json).toEqual({ error: 'grant_closed', reason: 'watch' });
  });
});

describe('Watch audio bridges are joined through Redis', () => {
  it('host on replica 2, Watch on replica 3: notices, byte-exact audio both ways, Watch gone, grant closed 4010', async () => {
    const phone = await pairedPhone(one, one);
    const grant = await openGrant(one, phone.gateway, true);
    const host = await open(wsUrl(two, grant.gid, 'host'), phone.gateway);
    const watch = await open(wsUrl(three, grant.gid, 'watch'), grant.watch);
    expect(await messagesOf(host, 1)).toEqual([Buffer.from([0, 1])]);

    const up = [audioMessage(1), audioMessage(640), audioMessage(65_536), audioMessage(3_000)];
    for (const message of up) watch.ws.send(message);
    const down = [audioMessage(320), audioMessage(65_536), audioMessage(7)];
    for (const message of down) host.ws.send(message);
    expect(Buffer.concat((await messagesOf(host, 1 + up.length)).slice(1)).equals(Buffer.concat(up))).toBe(true);
    expect((await messagesOf(host, 1 + up.length)).slice(1).map((m) => m.length)).toEqual(up.map((m) => m.length));
    const received = await messagesOf(watch, down.length);
    expect(received.map((m) => m.toString('hex'))).toEqual(down.map((m) => m.toString('hex')));

    // A second Watch socket (on replica 1) replaces the first: 4000 for it, [0,2] then [0,1] for the host.
    const newer = await open(wsUrl(one, grant.gid, 'watch'), grant.watch);
    expect(await watch.closed).toEqual({ code: 4000, reason: 'replaced' });
    expect((await messagesOf(host, 1 + up.length + 2)).slice(-2)).toEqual([Buffer.from([0, 2]), Buffer.from([0, 1])]);

    // The host closes the grant through replica 3: both sockets get 4010 grant_closed.
    const closed = await three.call('DELETE', `/v1/watch-tools/grants/${grant.gid}`, { auth: phone.gateway });
    expect(closed.status).toBe(204);
    expect(await newer.closed).toEqual({ code: 4010, reason: 'grant_closed' });
    expect(await host.closed).toEqual({ code: 4010, reason: 'grant_closed' });
  });

  it('a Watch on replica 3 with no host attached anywhere closes 4503; the host leaving closes the Watch 4503', async () => {
    const phone = await pairedPhone(two, two);
    const grant = await openGrant(two, phone.gateway, true);
    const alone = await open(wsUrl(three, grant.gid, 'watch'), grant.watch);
    expect(await alone.closed).toEqual({ code: 4503, reason: 'host_offline' });
    const host = await open(wsUrl(one, grant.gid, 'host'), phone.gateway);
    const watch = await open(wsUrl(three, grant.gid, 'watch'), grant.watch);
    await messagesOf(host, 1);
    host.ws.close(1000);
    expect(await watch.closed).toEqual({ code: 4503, reason: 'host_offline' });
  });

  it('a message starting with 0 from the Watch on replica 3 closes it 1002, and the host on replica 1 hears Watch gone', async () => {
    const phone = await pairedPhone(three, three);
    const grant = await openGrant(three, phone.gateway, true);
    const host = await open(wsUrl(one, grant.gid, 'host'), phone.gateway);
    const watch = await open(wsUrl(three, grant.gid, 'watch'), grant.watch);
    await messagesOf(host, 1);
    watch.ws.send(Buffer.from([0, 9, 9]));
    expect(await watch.closed).toEqual({ code: 1002, reason: 'reserved_type' });
    expect(await messagesOf(host, 2)).toEqual([Buffer.from([0, 1]), Buffer.from([0, 2])]);
    host.ws.close(1000);
    await host.closed;
  });
});
