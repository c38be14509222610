/**
 * kill -9 of one replica while exchanges are open on it and through it (issue 22 item 3): clients of
 * the dead replica lose their connection, clients of the others get the documented answers (503
 * host_offline for a held Watch call, `{calls:[]}` then 410 for the host's poll, 1001 for audio
 * sockets whose bridge lived there, 4503 for a Watch whose host was there), nothing the dead replica
 * acknowledged is lost (events, answers, rings and sessions live in PostgreSQL and Redis), and the
 * other replicas keep serving. Decisions have no long poll on this relay (API.md §4): the host's poll
 * is short, so what is checked is that an answer acknowledged by the dead replica is kept.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deviceToken, eventId, ROOMY_BUDGETS, type CapturedPush } from '../conformance/relay.js';
import { open } from '../watch/ws-clients.js';
import type { Replica } from './cluster.js';
import { clusterForFile, messagesOf, openGrant, pairedPhone, wsUrl } from './fixtures.js';

const { cluster } = clusterForFile({ replicas: 3, env: ROOMY_BUDGETS });

const watchCall = () => ({
  rid: randomBytes(16).toString('base64url'),
  n: randomBytes(12).toString('base64url'),
  ct: randomBytes(32).toString('base64url'),
});

/** Whether a fetch failed (the connection broke) instead of answering; handled from the start. */
async function connectionLost(reply: Promise<unknown>): Promise<boolean> {
  try {
    await reply;
    return false;
  } catch {
    return true;
  }
}

describe('one replica killed with -9', () => {
  it('open exchanges get their documented ends, nothing acknowledged is lost, the others keep serving', async () => {
    const [victim, two, three] = cluster.replicas as [Replica, Replica, Replica];

    // Held through the survivors, on a grant the victim holds (its gateway's first grant was made there).
    const ownedByVictim = await pairedPhone(two);
    const victimGrant = await openGrant(victim, ownedByVictim.gateway, true);
    const heldCall = three.call('POST', `/v1/watch-tools/grants/${victimGrant.gid}/calls`, {
      auth: victimGrant.watch,
      body: watchCall(),
    });
    const bridgeHost = await open(wsUrl(two, victimGrant.gid, 'host'), ownedByVictim.gateway);
    const bridgeWatch = await open(wsUrl(three, victimGrant.gid, 'watch'), victimGrant.watch);
    expect(await messagesOf(bridgeHost, 1)).toEqual([Buffer.from([0, 1])]);

    // Held on the victim itself, on a grant replica 2 holds.
    const ownedByTwo = await pairedPhone(three);
    const twoGrant = await openGrant(two, ownedByTwo.gateway, true);
    const callOnVictimLost = connectionLost(
      victim.call('POST', `/v1/watch-tools/grants/${twoGrant.gid}/calls`, {
        auth: twoGrant.watch,
        body: watchCall(),
      }),
    );
    const hostOnVictim = await open(wsUrl(victim, twoGrant.gid, 'host'), ownedByTwo.gateway);
    const watchOfVictimHost = await open(wsUrl(three, twoGrant.gid, 'watch'), twoGrant.watch);
    expect(await messagesOf(hostOnVictim, 1)).toEqual([Buffer.from([0, 1])]);

    // A ring made through the victim, its session awaited on the victim and on replica 3.
    const phoneVoip = deviceToken();
    const ringing = await pairedPhone(victim, victim, { voip_token: phoneVoip, watch_voip_token: deviceToken() });
    const before = cluster.captures().length;
    const rang = await victim.call('POST', '/v1/events', {
      auth: ringing.gateway,
      body: {
        type: 'call.requested',
        event_id: eventId('killed'),
        session_id: 's',
        profile: 'p',
        call: { id: 'call-abcdef01', kind: 'question', session_ids: ['s'], title: 'T', reason: 'R' },
      },
    });
    expect(rang.status, rang.text).toBe(202);
    const { ring } = (
      cluster
        .captures()
        .slice(before)
        .find((push) => push.deviceToken === phoneVoip) as CapturedPush
    ).notification.payload.conduit as { ring: { id: string; token: string } };
    expect(
      (
        await victim.call('POST', `/v1/rings/${ring.id}/settled`, {
          body: { token: ring.token, by: 'watch', outcome: 'answered' },
        })
      ).status,
    ).toBe(200);
    const sessionOnVictimLost = connectionLost(
      victim.call('GET', `/v1/rings/${ring.id}/session?wait=20`, {
        auth: `Bearer ${ring.token}`,
      }),
    );
    const sessionOnThree = three.call('GET', `/v1/rings/${ring.id}/session?wait=20`, {
      auth: `Bearer ${ring.token}`,
    });

    // Acknowledged by the victim: an event and a decision answer.
    const acknowledgedId = eventId('acked');
    expect(
      (
        await victim.call('POST', '/v1/events', {
          auth: ringing.gateway,
          body: { type: 'response.ready', event_id: acknowledgedId },
        })
      ).status,
    ).toBe(202);
    const requestId = `req-killed-${Date.now()}`;
    expect(
      (
        await victim.call('POST', '/v1/events', {
          auth: ringing.gateway,
          body: {
            type: 'input.needed',
            event_id: eventId('park'),
            decision: { kind: 'clarify', request_id: requestId, question: 'Q?', choices: ['a', 'b'] },
          },
        })
      ).status,
    ).toBe(202);
    expect(
      (
        await victim.call('POST', `/v1/decisions/${requestId}/respond`, {
          auth: ringing.device,
          body: { answer: 'a', gateway_id: ringing.gatewayId },
        })
      ).status,
    ).toBe(200);

    await cluster.kill(victim);

    // Clients of the dead replica: their connections broke.
    expect(await callOnVictimLost).toBe(true);
    expect(await sessionOnVictimLost).toBe(true);
    // Through the survivors, on what the victim held: the documented ends.
    const call = await heldCall;
    expect(call.status, call.text).toBe(503);
    expect(call.json).toEqual({ error: 'host_offline' });
    expect(await bridgeHost.closed).toEqual({ code: 1001, reason: 'going_away' });
    expect(await bridgeWatch.closed).toEqual({ code: 1001, reason: 'going_away' });
    expect(await watchOfVictimHost.closed).toEqual({ code: 4503, reason: 'host_offline' });
    void hostOnVictim;
    // The victim's grant died with it: 410 for its host, 401 for its Watch.
    const poll = await two.call('GET', `/v1/watch-tools/grants/${victimGrant.gid}/calls?wait_ms=0`, {
      auth: ownedByVictim.gateway,
    });
    expect(poll.status).toBe(410);
    expect(poll.json).toEqual({ error: 'grant_closed', reason: 'expired' });
    expect(
      (
        await three.call('POST', `/v1/watch-tools/grants/${victimGrant.gid}/calls`, {
          auth: victimGrant.watch,
          body: watchCall(),
        })
      ).status,
    ).toBe(401);
    // The gateway opens a new grant on a live replica and goes on.
    const fresh = await openGrant(three, ownedByVictim.gateway, false);
    const polled = two.call('GET', `/v1/watch-tools/grants/${fresh.gid}/calls?wait_ms=20000`, {
      auth: ownedByVictim.gateway,
    });
    const freshCall = watchCall();
    const calling = three.call('POST', `/v1/watch-tools/grants/${fresh.gid}/calls`, {
      auth: fresh.watch,
      body: freshCall,
    });
    expect((await polled).json).toEqual({ calls: [freshCall] });
    const result = { n: randomBytes(12).toString('base64url'), ct: randomBytes(16).toString('base64url') };
    expect(
      (
        await two.call('POST', `/v1/watch-tools/grants/${fresh.gid}/results/${freshCall.rid}`, {
          auth: ownedByVictim.gateway,
          body: result,
        })
      ).status,
    ).toBe(200);
    expect((await calling).json).toEqual(result);

    // Nothing the victim acknowledged is lost.
    const duplicate = await two.call('POST', '/v1/events', {
      auth: ringing.gateway,
      body: { type: 'response.ready', event_id: acknowledgedId },
    });
    expect(duplicate.status).toBe(200);
    expect(duplicate.json).toEqual({ accepted: true, duplicate: true });
    expect((await three.call('GET', `/v1/decisions/${requestId}`, { auth: ringing.gateway })).json).toEqual({
      status: 'answered',
      answer: 'a',
    });
    const sealed = randomBytes(2_000).toString('base64url');
    const stored = await two.call('PUT', `/v1/rings/${ring.id}/session`, { body: { token: ring.token, sealed } });
    expect(stored.status, stored.text).toBe(200);
    expect((await sessionOnThree).json).toEqual({ sealed });

    // The balancer's traffic goes on through the survivors.
    for (let i = 0; i < 6; i += 1) {
      const reply = await cluster.call('POST', '/v1/events', {
        auth: ringing.gateway,
        body: { type: 'response.ready', event_id: eventId('after') },
      });
      expect(reply.status, reply.text).toBe(202);
    }
    for (const survivor of [two, three]) {
      expect(survivor.process.child.exitCode).toBeNull();
      expect(survivor.process.output()).not.toContain('"request failed"');
    }
  }, 60_000);
});
