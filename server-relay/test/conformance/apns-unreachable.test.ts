/** APNS_MODE=throw: every send fails, so alerts answer 502 apns_unreachable (§2 step 9/10). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventId, pairHost, registerPhone, ROOMY_BUDGETS, startRelay, type Host, type Relay } from './relay.js';

let relay: Relay;
let host: Host;

beforeAll(async () => {
  relay = await startRelay({ ...ROOMY_BUDGETS, APNS_MODE: 'throw' });
  host = await pairHost(relay, await registerPhone(relay));
});
afterAll(() => relay.stop());

describe('APNs unreachable', () => {
  it('an alert is 502 {"error":"apns_unreachable"}; the event id is consumed', async () => {
    const id = eventId();
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'turn.failed', event_id: id },
    });
    expect(reply.status).toBe(502);
    expect(reply.json).toEqual({ error: 'apns_unreachable' });
    const again = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'turn.failed', event_id: id },
    });
    expect(again.json).toEqual({ accepted: true, duplicate: true });
  });

  it('a clarify whose push throws is parked undeliverable', async () => {
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: {
        type: 'input.needed',
        event_id: eventId(),
        decision: { kind: 'clarify', request_id: 'unreachable-1', question: 'Which?' },
      },
    });
    expect(reply.status).toBe(502);
    expect(reply.json).toEqual({ error: 'apns_unreachable' });
    const poll = await relay.call('GET', '/v1/decisions/unreachable-1', { auth: host.auth });
    expect(poll.json).toEqual({ status: 'pending', deliverable: false });
  });
});
