import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, systemClock, type Clock } from '../../src/clock.js';
import { DeliveryQueue, type DeliveryLimits } from '../../src/delivery/delivery-queue.js';
import type { Settlement } from '../../src/delivery/outcome.js';
import { privacyPrepare } from '../../src/delivery/pairing-adapter.js';
import { httpRelayGateway } from '../../src/delivery/relay-gateway.js';
import { isCredentialSafeRelayUrl } from '../../src/kernel/loopback.js';
import { relaySender } from '../../src/delivery/relay-sender.js';
import { Spool } from '../../src/delivery/spool.js';
import { memoryLogger, silentLogger } from '../../src/log.js';
import { buildEvent } from '../../src/notifier/events.js';
import type { ProfileScope } from '../../src/notifier/notifier.js';
import { tempHermesHome } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { CREDENTIAL, writePairing } from '../support/pairing.js';

const limits: DeliveryLimits = { capacity: 16, maxAgeMs: 60_000, concurrency: 2, backoff: { baseMs: 2, maxMs: 10 } };

let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;
let profile: ProfileScope;

beforeEach(async () => {
  home = tempHermesHome();
  relay = new FakeRelay();
  await relay.start();
  profile = { name: 'default', home: home.root };
  writePairing(home.root, relay.url);
});
afterEach(async () => {
  await relay.stop();
  home.cleanup();
});

function event(id: string, body = 'hello') {
  return buildEvent({ eventId: id, type: 'response.ready', pluginVersion: '0.1.0', body, profile: 'default' });
}

function queue(
  options: {
    clock?: Clock;
    spool?: Spool | null;
    limits?: Partial<DeliveryLimits>;
    log?: ReturnType<typeof memoryLogger>;
  } = {},
) {
  const clock = options.clock ?? systemClock;
  const sender = relaySender(httpRelayGateway({ userAgent: 'test', timeoutMs: 2_000 }), privacyPrepare(clock));
  return new DeliveryQueue(
    sender,
    { ...limits, ...options.limits },
    clock,
    options.log ?? silentLogger,
    options.spool ?? null,
  );
}

describe('delivery', () => {
  it('posts with the gateway credential and a compact event body', async () => {
    const q = queue();
    expect(q.enqueue(profile, event('response:aaaaaaaa'))).toBe(true);
    await q.whenIdle();
    expect(relay.events).toHaveLength(1);
    expect(relay.events[0]?.authorization).toBe(`Bearer ${CREDENTIAL}`);
    expect(relay.events[0]?.body).toMatchObject({
      event_id: 'response:aaaaaaaa',
      type: 'response.ready',
      body: 'hello',
    });
  });

  it('retries network errors and relay 5xx with the same event id until the relay takes it', async () => {
    relay.scripted.push(
      { status: 503, body: { error: 'unavailable' } },
      { status: 500, body: { error: 'internal_error' } },
    );
    const q = queue();
    const settlements: Settlement['kind'][] = [];
    q.enqueue(profile, event('response:bbbbbbbb'), (s) => settlements.push(s.kind));
    await q.whenIdle();
    expect(relay.events.map((e) => e.body.event_id)).toEqual([
      'response:bbbbbbbb',
      'response:bbbbbbbb',
      'response:bbbbbbbb',
    ]);
    expect(settlements).toEqual(['retry', 'retry', 'accepted']);
  });

  it('does not retry what the relay refused (4xx, APNs rejection)', async () => {
    relay.scripted.push({ status: 400, body: { error: 'invalid_event_type' } });
    relay.scripted.push({ status: 502, body: { error: 'apns_rejected', reason: 'BadDeviceToken', status: 400 } });
    const log = memoryLogger();
    const q = queue({ log });
    const outcomes: Settlement[] = [];
    q.enqueue(profile, event('response:cccccccc'), (s) => outcomes.push(s));
    q.enqueue(profile, event('response:dddddddd'), (s) => outcomes.push(s));
    await q.whenIdle();
    expect(relay.events).toHaveLength(2);
    expect(outcomes.map((o) => ('error' in o ? o.error : o.kind)).sort()).toEqual([
      'apns_rejected',
      'invalid_event_type',
    ]);
    expect(log.lines.join('\n')).not.toContain(CREDENTIAL);
  });

  it('drops events of an unpaired profile at send time', async () => {
    const other: ProfileScope = { name: 'work', home: path.join(home.root, 'profiles', 'work') };
    const q = queue();
    const outcomes: string[] = [];
    q.enqueue(other, event('response:eeeeeeee'), (s) => outcomes.push(s.kind));
    await q.whenIdle();
    expect(outcomes).toEqual(['unpaired']);
    expect(relay.events).toHaveLength(0);
  });

  it('keeps undelivered events in the spool across a restart and delivers them then', async () => {
    const spoolDir = path.join(home.root, 'conduit-host', 'spool');
    writePairing(home.root, 'http://127.0.0.1:9'); // nothing listens on the discard port
    const first = queue({
      spool: new Spool(spoolDir, silentLogger),
      limits: { backoff: { baseMs: 60_000, maxMs: 60_000 } },
    });
    await first.start();
    first.enqueue(profile, event('response:ffffffff', 'kept'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await first.stop();
    const files = readdirSync(spoolDir).filter((f) => f.endsWith('.json'));
    expect(files).toHaveLength(1);
    expect(statSync(path.join(spoolDir, files[0]!)).mode & 0o777).toBe(0o600);

    writePairing(home.root, relay.url);
    const second = queue({ spool: new Spool(spoolDir, silentLogger) });
    await second.start();
    await second.whenIdle();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(relay.events.map((e) => e.body.body)).toEqual(['kept']);
    expect(readdirSync(spoolDir).filter((f) => f.endsWith('.json'))).toEqual([]);
  });

  it('an event still queued when `redact on` is set leaves redacted (privacy is applied at send time)', async () => {
    relay.scripted.push({ status: 503, body: { error: 'unavailable' } });
    const q = queue({ limits: { backoff: { baseMs: 300, maxMs: 300 } } });
    q.enqueue(
      profile,
      buildEvent({
        eventId: 'response:jjjjjjjj',
        type: 'response.ready',
        pluginVersion: '0.1.0',
        title: 'Infra',
        body: 'secret text',
      }),
    );
    for (let i = 0; i < 100 && relay.events.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(relay.events[0]?.body).toMatchObject({ title: 'Infra', body: 'secret text' });
    writePairing(home.root, relay.url, { redact_content: true });
    await q.whenIdle();
    const retried = relay.events[1]?.body ?? {};
    expect(retried.type).toBe('response.ready');
    expect(JSON.stringify(retried)).not.toContain('secret text');
    expect(retried).not.toHaveProperty('title');
  });

  it('drops a spooled event that is too old to matter, and keeps an unreadable spool file as .corrupt', async () => {
    const spoolDir = path.join(home.root, 'conduit-host', 'spool');
    const clock = new ManualClock();
    const spool = new Spool(spoolDir, silentLogger);
    await spool.load();
    spool.write({
      v: 1,
      seq: 7,
      profile,
      event: event('response:gggggggg') as never,
      enqueued_at: clock.now() - 61_000,
      attempts: 3,
    });
    await spool.flush();
    writeFileSync(path.join(spoolDir, '0000000000000009.json'), '{not json');
    const log = memoryLogger();
    const q = queue({ clock, spool: new Spool(spoolDir, log), log });
    await q.start();
    await q.whenIdle();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(relay.events).toHaveLength(0);
    expect(existsSync(path.join(spoolDir, '0000000000000009.json.corrupt'))).toBe(true);
    expect(log.lines.some((l) => l.includes('too old'))).toBe(true);
  });

  it('is bounded: past capacity the oldest waiting event is dropped', async () => {
    relay.delayMs = 100;
    const q = queue({ limits: { capacity: 3, concurrency: 1 } });
    const dropped: string[] = [];
    for (let i = 0; i < 6; i++) {
      q.enqueue(profile, event(`response:${String(i).repeat(8)}`), (s) => {
        if (s.kind === 'dropped') dropped.push(String(i));
      });
    }
    expect(q.size).toBeLessThanOrEqual(3);
    await q.whenIdle();
    expect(dropped.length).toBe(3);
  });
});

describe('relay URL rules', () => {
  it('sends credentials only over HTTPS, or plain HTTP to this machine', () => {
    expect(isCredentialSafeRelayUrl('https://push.example.com')).toBe(true);
    expect(isCredentialSafeRelayUrl('http://127.0.0.1:9120')).toBe(true);
    expect(isCredentialSafeRelayUrl('http://localhost:9120')).toBe(true);
    expect(isCredentialSafeRelayUrl('http://[::1]:9120')).toBe(true);
    expect(isCredentialSafeRelayUrl('http://192.168.1.4:9120')).toBe(false);
    expect(isCredentialSafeRelayUrl('http://100.64.0.1:9120')).toBe(false);
    expect(isCredentialSafeRelayUrl('ftp://x')).toBe(false);
    expect(isCredentialSafeRelayUrl('https://user:pw@x')).toBe(false);
  });

  it('never sends a credential to a LAN relay over plain HTTP', async () => {
    writePairing(home.root, 'http://10.0.0.9:9120');
    const q = queue();
    const outcomes: Settlement[] = [];
    q.enqueue(profile, event('response:hhhhhhhh'), (s) => outcomes.push(s));
    await q.whenIdle();
    expect(outcomes).toEqual([{ kind: 'failed', status: 0, error: 'insecure_relay_url' }]);
  });

  it('never follows a redirect', async () => {
    const hits: string[] = [];
    const target = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('{}');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const port = (target.address() as AddressInfo).port;
    const redirector = http.createServer((_req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${port}/v1/events` });
      res.end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
    writePairing(home.root, `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`);
    const q = queue();
    const outcomes: Settlement[] = [];
    q.enqueue(profile, event('response:iiiiiiii'), (s) => outcomes.push(s));
    await q.whenIdle();
    expect(outcomes).toEqual([{ kind: 'failed', status: 307, error: 'redirect_refused' }]);
    expect(hits).toEqual([]);
    redirector.close();
    target.close();
  });
});
