/**
 * Bounds and APNs refusals against one real relay process with tight RELAY_* bounds and
 * APNS_MODE=reject (every push refused 403 InvalidProviderToken), plus the §9 boot rules.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  baseEnv,
  deviceToken,
  eventId,
  pairHost,
  registerPhone,
  startRelay,
  TOPIC,
  type Host,
  type Phone,
  type Relay,
} from './relay.js';

let relay: Relay;
let phone: Phone;
let host: Host;

beforeAll(async () => {
  relay = await startRelay({
    APNS_MODE: 'reject',
    RELAY_MAX_INSTALLATIONS: '3',
    RELAY_REGISTRATIONS_PER_MINUTE: '3',
    RELAY_MAX_ACTIVE_DECISIONS: '1',
    RELAY_CALLS_PER_INSTALLATION_PER_DAY: '1',
  });
  phone = await registerPhone(relay);
  host = await pairHost(relay, phone);
});
afterAll(() => relay.stop());

const clarify = (requestId: string, id = eventId()) => ({
  type: 'input.needed',
  event_id: id,
  decision: { kind: 'clarify', request_id: requestId, question: 'Which?' },
});
const send = (body: unknown) => relay.call('POST', '/v1/events', { auth: host.auth, body });

describe('APNs refusals', () => {
  it('a refused alert is 502 {error:"apns_rejected", reason, status}; 403 does not deactivate', async () => {
    const reply = await send({ type: 'response.ready', event_id: eventId() });
    expect(reply.status).toBe(502);
    expect(reply.json).toEqual({ error: 'apns_rejected', reason: 'InvalidProviderToken', status: 403 });
    expect((await relay.call('GET', '/v1/meta', { auth: phone.auth })).status).toBe(200);
  });
});

describe('decision capacity and the call ceiling', () => {
  it('a refused clarify parks undeliverable; at capacity 429 without consuming the event id', async () => {
    const parked = await send(clarify('cap-first'));
    expect(parked.status).toBe(502);
    expect(parked.json).toEqual({ error: 'apns_rejected', reason: 'InvalidProviderToken', status: 403 });
    const poll = await relay.call('GET', '/v1/decisions/cap-first', { auth: host.auth });
    expect(poll.json).toEqual({ status: 'pending', deliverable: false });

    const retryId = eventId();
    const full = await send(clarify('cap-second', retryId));
    expect(full.status).toBe(429);
    expect(full.json).toEqual({ error: 'decision_capacity_exceeded' });
    // Still full: the same event id is refused again, not reported as a duplicate.
    expect((await send(clarify('cap-second', retryId))).json).toEqual({ error: 'decision_capacity_exceeded' });
    // A non-clarify event is not affected by decision capacity.
    expect((await send({ type: 'plugin.hello', event_id: eventId() })).status).toBe(202);

    const released = await relay.call('DELETE', '/v1/decisions/cap-first', { auth: host.auth });
    expect(released.json).toEqual({ status: 'cancelled' });
    const retried = await send(clarify('cap-second', retryId));
    expect(retried.status).toBe(502);
    // Accepted now: a repeat is a duplicate, even at capacity again.
    const repeat = await send(clarify('cap-second', retryId));
    expect(repeat.status).toBe(200);
    expect(repeat.json).toEqual({ accepted: true, duplicate: true });
  });

  it('call.requested: one per installation per day (RELAY_CALLS_PER_INSTALLATION_PER_DAY), then 429 call_limit', async () => {
    const call = { id: 'call-limit-1', kind: 'done', session_ids: ['s'] };
    const first = await send({ type: 'call.requested', event_id: eventId(), call });
    expect(first.status).toBe(502);
    const second = await send({ type: 'call.requested', event_id: eventId(), call });
    expect(second.status).toBe(429);
    expect(second.json).toEqual({ error: 'call_limit' });
  });
});

describe('installation capacity', () => {
  it('inactive installations keep their slot; a full relay answers 429 installation_limit_reached before the budget', async () => {
    const second = await registerPhone(relay);
    expect((await relay.call('DELETE', `/v1/installations/${second.id}`, { auth: second.auth })).status).toBe(204);
    await registerPhone(relay);
    // Three registrations used the budget of 3 and filled the 3 slots: capacity answers first.
    const full = await relay.call('POST', '/v1/installations', {
      body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'production' },
    });
    expect(full.status).toBe(429);
    expect(full.json).toEqual({ error: 'installation_limit_reached' });
    // Validation still comes before capacity.
    const invalid = await relay.call('POST', '/v1/installations', {
      body: { bundle_id: TOPIC, device_token: deviceToken(), environment: 'sandbox' },
    });
    expect(invalid.json).toEqual({ error: 'production_only' });
  });
});

const MAIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/main.ts');

/** Boots the relay with `env` and waits for it to exit (a boot failure) or kills it after 45 s. */
function boot(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-conformance-boot-'));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
      cwd: path.dirname(MAIN),
      env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...baseEnv(dir), ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, stderr });
    });
  });
}

describe('§9 boot rules', () => {
  it('bad RELAY_* values stop the relay with "<NAME> must be a positive integer." on stderr', async () => {
    const cases: [string, string][] = [
      ['RELAY_MAX_INSTALLATIONS', '0'],
      ['RELAY_EVENTS_PER_MINUTE', '1e3'],
      ['RELAY_REGISTRATIONS_PER_MINUTE', '9007199254740993'],
      ['RELAY_CALLS_PER_INSTALLATION_PER_DAY', '-2'],
    ];
    // Two at a time: each boot is a whole node process on a shared 2-core machine.
    const results = [
      ...(await Promise.all(cases.slice(0, 2).map(([name, value]) => boot({ [name]: value })))),
      ...(await Promise.all(cases.slice(2).map(([name, value]) => boot({ [name]: value })))),
    ];
    results.forEach((result, index) => {
      const name = cases[index]?.[0] ?? '';
      expect(result.code, name).not.toBe(0);
      expect(result.code, name).not.toBeNull();
      expect(result.stderr).toContain(`${name} must be a positive integer.`);
    });
  }, 150_000);

  it('PUBLIC_URL must be https', async () => {
    const result = await boot({ PUBLIC_URL: 'http://relay.example.test' });
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toContain('PUBLIC_URL');
  }, 90_000);
});
