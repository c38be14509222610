import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { silentLogger } from '../../src/messenger/clock.js';
import { MessengerFatalError } from '../../src/messenger/errors.js';
import { RelayFullSyncError } from '../../src/messenger/errors.js';
import { backoffCeilingMs, backoffDelayMs } from '../../src/messenger/backoff.js';
import { RelaySocket, type CommittedEvent } from '../../src/messenger/relay-socket.js';
import { normalizeRelayBaseUrl } from '../../src/messenger/base-url.js';
import { FakeRelay, inboundMessage } from './fakes/fake-relay.js';
import { FakeClock } from './fake-clock.js';
import { RELAY_TOKEN, waitFor } from './harness.js';

let relay: FakeRelay;
let clock: FakeClock;
let committed: CommittedEvent[];
let sent: string[];
let received: string[];
let socket: RelaySocket | null;
let fullSyncs: bigint[];
let fullSyncImpl: (through: bigint) => Promise<void>;

function open(random = () => 0): { socket: RelaySocket; run: Promise<unknown> } {
  socket = new RelaySocket({
    websocketUrl: normalizeRelayBaseUrl(relay.url).websocketUrl,
    agentToken: RELAY_TOKEN,
    clock,
    random,
    log: silentLogger,
    onSend: (t) => sent.push(t),
    onReceive: (t) => received.push(t),
    sink: {
      commit: (events) => {
        committed.push(...events);
      },
      fullSync: (through) => {
        fullSyncs.push(through);
        return fullSyncImpl(through);
      },
    },
  });
  const run = socket.run().then(
    () => 'stopped',
    (e: unknown) => e,
  );
  return { socket, run };
}

async function fatalOf(run: Promise<unknown>): Promise<MessengerFatalError> {
  const e = await run;
  expect(e).toBeInstanceOf(MessengerFatalError);
  return e as MessengerFatalError;
}

const ev = () => inboundMessage({ chatId: randomUUID(), senderId: randomUUID() });

beforeEach(async () => {
  relay = new FakeRelay({ token: RELAY_TOKEN });
  await relay.listen();
  clock = new FakeClock();
  committed = [];
  sent = [];
  received = [];
  fullSyncs = [];
  fullSyncImpl = async () => {};
  socket = null;
});

afterEach(async () => {
  socket?.stop();
  await relay.close();
});

describe('Relay WebSocket protocol', () => {
  it('sends a cumulative ACK for every event, each only after its commit, with compact JSON', async () => {
    const { run } = open();
    relay.push(ev(), ev(), ev());
    await waitFor(() => relay.acks.length === 3, 15_000, 'acks');
    expect(committed.map((c) => c.sequence)).toEqual([1n, 2n, 3n]);
    expect(sent.filter((s) => s.includes('ack'))).toEqual([
      '{"type":"ack","through_sequence":"1"}',
      '{"type":"ack","through_sequence":"2"}',
      '{"type":"ack","through_sequence":"3"}',
    ]);
    socket?.stop();
    expect(await run).toBe('stopped');
  });

  it('a failed commit sends no ACK and reconnects; Relay redelivers the event', async () => {
    let failOnce = true;
    socket = new RelaySocket({
      websocketUrl: normalizeRelayBaseUrl(relay.url).websocketUrl,
      agentToken: RELAY_TOKEN,
      clock,
      random: () => 0,
      log: silentLogger,
      sink: {
        commit: (events) => {
          if (failOnce) {
            failOnce = false;
            throw new Error('disk full');
          }
          committed.push(...events);
        },
        fullSync: async () => {},
      },
    });
    void socket.run();
    relay.push(ev());
    await waitFor(() => clock.timeouts.includes(0), 15_000, 'backoff after the failed commit');
    expect(relay.acks).toEqual([]);
    clock.advance(0);
    await waitFor(() => relay.acks.length === 1, 15_000, 'ack after redelivery');
    expect(relay.acks[0]?.through).toBe(1n);
    expect(committed).toHaveLength(1);
  });

  it('pings with the exact bytes {"type":"ping"} every 30 s and reconnects after 60 s without a pong', async () => {
    const { socket: s } = open();
    await waitFor(() => received.some((t) => t.startsWith('{"type":"ready"')), 15_000, 'ready');
    relay.answerPings = false;
    clock.advance(30_000);
    await waitFor(() => relay.pingCount === 1, 15_000, 'ping');
    expect(sent).toContain('{"type":"ping"}');
    clock.advance(29_999);
    await waitFor(() => relay.pingCount === 1, 15_000, 'no second ping yet');
    expect(s.connections).toBe(1);
    clock.advance(1); // 60 s since the last pong: the connection is dead.
    await waitFor(() => s.connections === 1 && clock.timeouts.includes(0), 15_000, 'backoff scheduled');
    clock.advance(0);
    await waitFor(() => s.connections === 2, 15_000, 'reconnected');
  });

  it('pongs keep the connection alive', async () => {
    const { socket: s } = open();
    await waitFor(() => received.some((t) => t.startsWith('{"type":"ready"')), 15_000, 'ready');
    for (let i = 1; i <= 4; i++) {
      clock.advance(30_000);
      await waitFor(() => received.filter((t) => t === '{"type":"pong"}').length === i, 15_000, `pong ${i}`);
    }
    expect(s.connections).toBe(1);
  });

  it('backoff is full jitter over 500 ms × 2^(n−1), capped at 30 s, and resets on ready', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map(backoffCeilingMs)).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    expect(backoffCeilingMs(200)).toBe(30_000);
    expect(backoffDelayMs(3, () => 0.5)).toBe(1000);
    expect(backoffDelayMs(1, () => 0)).toBe(0);
  });

  it('retryable upgrade statuses back off with growing delays', async () => {
    relay.upgradeStatus = 503;
    const { socket: s } = open(() => 0.999);
    // The ready timeout is 30 s; every other timeout scheduled here is a backoff delay.
    const backoffsScheduled = () => clock.timeouts.filter((t) => t !== 30_000);
    for (let n = 1; n <= 4; n++) {
      await waitFor(() => relay.upgrades.length === n && backoffsScheduled().length === n, 15_000, `attempt ${n}`);
      clock.advance(40_000);
    }
    const backoffs = clock.timeouts.filter((t) => t !== 30_000);
    expect(backoffs.slice(0, 3).map((d) => Math.round(d))).toEqual([500, 999, 1998]);
    relay.upgradeStatus = null;
    await waitFor(() => relay.connections.length === 1, 15_000, 'connected at last');
    expect(s.connections).toBeGreaterThanOrEqual(5);
  });

  it.each([
    [401, 'relay_unauthorized'],
    [403, 'relay_websocket_http_403'],
    [404, 'relay_websocket_http_404'],
    [409, 'relay_webhook_configured'],
  ])('upgrade status %i is terminal (%s)', async (status, code) => {
    relay.upgradeStatus = status;
    const { run } = open();
    expect((await fatalOf(run)).code).toBe(code);
    expect(relay.upgrades).toHaveLength(1);
  });

  it.each([408, 429, 500, 502])('upgrade status %i is retried', async (status) => {
    relay.upgradeStatus = status;
    open();
    await waitFor(() => relay.upgrades.length === 1 && clock.timeouts.length >= 2, 15_000, 'first attempt');
    relay.upgradeStatus = null;
    clock.advance(1_000);
    await waitFor(() => relay.connections.length === 1, 15_000, 'second attempt connects');
  });

  it.each([
    [4401, 'relay_unauthorized'],
    [4410, 'relay_webhook_configured'],
    [4403, 'relay_websocket_server_policy_4403'],
    [4499, 'relay_websocket_server_policy_4499'],
  ])('close code %i is terminal (%s)', async (code, fatal) => {
    const { run } = open();
    await waitFor(() => received.some((t) => t.startsWith('{"type":"ready"')), 15_000, 'ready');
    relay.closeAll(code, 'policy');
    expect((await fatalOf(run)).code).toBe(fatal);
  });

  it.each([1011, 1012, 4408, 1000])('close code %i reconnects', async (code) => {
    const { socket: s } = open();
    await waitFor(() => received.some((t) => t.startsWith('{"type":"ready"')), 15_000, 'ready');
    relay.closeAll(code, 'bye');
    await waitFor(() => clock.timeouts.includes(0), 15_000, 'backoff');
    clock.advance(0);
    await waitFor(() => s.connections === 2 && relay.connections.length === 1, 15_000, 'reconnected');
  });

  it.each([
    'invalid_frame',
    'ack_out_of_range',
    'stale_connection',
    'ack_failed',
    'delivery_failed',
    'full_sync_required',
    'full_sync_mismatch',
  ])('error frame %s: retryable reconnects, non-retryable stops', async (code) => {
    const { socket: s, run } = open();
    await waitFor(() => received.some((t) => t.startsWith('{"type":"ready"')), 15_000, 'ready');
    relay.sendRaw(JSON.stringify({ type: 'error', code, message: 'x', fatal: true, retryable: true }));
    await waitFor(() => clock.timeouts.includes(0), 15_000, 'backoff');
    clock.advance(0);
    await waitFor(() => s.connections === 2 && relay.connections.length === 1, 15_000, 'reconnected');
    relay.sendRaw(JSON.stringify({ type: 'error', code, message: 'no', fatal: true, retryable: false }));
    expect((await fatalOf(run)).code).toBe('relay_websocket_terminal');
  });

  it.each([
    ['restart', null],
    ['heartbeat_timeout', null],
    ['revoked', 'relay_websocket_revoked'],
    ['webhook_configured', 'relay_webhook_configured'],
  ])('disconnect %s', async (reason, fatal) => {
    const { socket: s, run } = open();
    await waitFor(() => received.some((t) => t.startsWith('{"type":"ready"')), 15_000, 'ready');
    relay.sendRaw(JSON.stringify({ type: 'disconnect', reason }));
    if (fatal === null) {
      await waitFor(() => clock.timeouts.includes(0), 15_000, 'backoff');
      clock.advance(0);
      await waitFor(() => s.connections === 2, 15_000, 'reconnected');
    } else {
      expect((await fatalOf(run)).code).toBe(fatal);
    }
  });

  it.each([
    ['a frame with an extra key', JSON.stringify({ type: 'pong', extra: 1 })],
    ['a non-canonical sequence', JSON.stringify({ type: 'event', sequence: '01', event: ev() })],
    ['a gap in sequences', JSON.stringify({ type: 'event', sequence: '2', event: ev() })],
    [
      'a second ready',
      JSON.stringify({
        type: 'ready',
        connection_id: randomUUID(),
        acked_through: '0',
        full_sync_required: false,
        full_sync_through: null,
        heartbeat_interval_ms: 1,
        max_in_flight: 1,
      }),
    ],
    ['an unknown frame type', JSON.stringify({ type: 'hello' })],
    [
      'an envelope with an unknown event type',
      JSON.stringify({ type: 'event', sequence: '1', event: { ...ev(), event_type: 'message.edited' } }),
    ],
    ['text that is not JSON', 'not json'],
  ])('%s is a protocol error: nothing is committed or acked, and it never reconnects', async (_what, frame) => {
    relay.holdEvents = true;
    const { socket: s, run } = open();
    await waitFor(() => received.some((t) => t.startsWith('{"type":"ready"')), 15_000, 'ready');
    await new Promise((r) => setTimeout(r, 20));
    relay.sendRaw(frame);
    expect((await fatalOf(run)).code).toBe('relay_protocol_error');
    expect(committed).toEqual([]);
    expect(relay.acks).toEqual([]);
    expect(s.connections).toBe(1);
  });

  it('a gap inside a stream fails before the later event is committed', async () => {
    relay.skipOnce.add(2n);
    const { run } = open();
    relay.push(ev(), ev(), ev());
    expect((await fatalOf(run)).message).toMatch(/not contiguous/);
    expect(committed.map((c) => c.sequence)).toEqual([1n]);
    await waitFor(() => relay.acks.length === 1, 15_000, 'ack of the event before the gap');
    await new Promise((r) => setTimeout(r, 30));
    expect(relay.acks.map((a) => a.through)).toEqual([1n]);
  });

  it('answers a legacy server ping with {"type":"pong"}', async () => {
    open();
    await waitFor(() => received.some((t) => t.startsWith('{"type":"ready"')), 15_000, 'ready');
    relay.sendRaw(JSON.stringify({ type: 'ping', sent_at: '2026-01-01T00:00:00Z' }));
    await waitFor(() => sent.includes('{"type":"pong"}'), 15_000, 'pong');
  });

  it('FULL sync: no ACKs while syncing, full_sync_complete only after the snapshot commits, then N+1 continues', async () => {
    for (let i = 0; i < 5; i++) relay.events.push(ev());
    relay.retainedAfter = 5n;
    let release!: () => void;
    fullSyncImpl = () => new Promise<void>((r) => (release = r));
    open();
    await waitFor(() => fullSyncs.length === 1, 15_000, 'full sync started');
    expect(fullSyncs).toEqual([5n]);
    await new Promise((r) => setTimeout(r, 30));
    expect(sent.some((s) => s.includes('full_sync_complete'))).toBe(false);
    release();
    await waitFor(() => relay.fullSyncCompletions.length === 1, 15_000, 'complete');
    expect(sent).toContain('{"type":"full_sync_complete","through_sequence":"5"}');
    relay.push(ev());
    await waitFor(() => relay.acks.length === 1, 15_000, 'ack 6');
    expect(committed.map((c) => c.sequence)).toEqual([6n]);
  });

  it('a FULL-sync failure stops the connector (relay_full_sync_failed) without full_sync_complete', async () => {
    relay.events.push(ev());
    relay.retainedAfter = 1n;
    fullSyncImpl = async () => {
      throw new RelayFullSyncError('duplicate chat');
    };
    const { run } = open();
    expect((await fatalOf(run)).code).toBe('relay_full_sync_failed');
    expect(relay.fullSyncCompletions).toEqual([]);
  });

  it('an event while a FULL sync is pending is a protocol error', async () => {
    relay.events.push(ev());
    relay.retainedAfter = 1n;
    fullSyncImpl = () => new Promise<void>(() => {});
    const { run } = open();
    await waitFor(() => fullSyncs.length === 1, 15_000, 'sync');
    relay.sendRaw(JSON.stringify({ type: 'event', sequence: '2', event: ev() }));
    expect((await fatalOf(run)).code).toBe('relay_protocol_error');
  });
});
