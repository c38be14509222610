/**
 * Per-IP limits behind a reverse proxy (issue 12, item 3): the address counted is the one the
 * trusted proxy appended to X-Forwarded-For, never an entry the client wrote itself.
 */
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deviceToken, ROOMY_BUDGETS, startRelay, testDatabase, TOPIC, type Relay } from './support/harness.js';
import { runRelayAsync } from './support/relay-process.js';

let db: { url: string; release: () => Promise<void> };
let relay: Relay | undefined;

beforeAll(async () => {
  db = await testDatabase('sqlite');
});
afterEach(async () => {
  await relay?.close();
  relay = undefined;
});
afterAll(async () => {
  await db.release();
});

/** Registers with the given X-Forwarded-For header and returns the status. */
async function registerVia(forwardedFor: string, seed: number): Promise<number> {
  const response = await fetch(`${relay?.baseUrl}/v1/installations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
    body: JSON.stringify({ bundle_id: TOPIC, device_token: deviceToken(seed), environment: 'production' }),
  });
  return response.status;
}

/** 13 registrations a minute from one counted address: the 13th is the per-address limit's 429. */
async function thirteenRegistrations(forwardedFor: (i: number) => string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < 13; i += 1) statuses.push(await registerVia(forwardedFor(i), i + 16));
  return statuses;
}

describe('TRUST_PROXY and X-Forwarded-For', () => {
  it('TRUST_PROXY=1: a client rotating a forged first entry is still counted by the address the proxy appended', async () => {
    relay = await startRelay(db.url, { ...ROOMY_BUDGETS, TRUST_PROXY: '1' });
    const statuses = await thirteenRegistrations((i) => `198.51.100.${i + 1}, 203.0.113.7`);
    expect(statuses.slice(0, 12)).toEqual(Array(12).fill(201));
    expect(statuses[12]).toBe(429);
    // The proxy's entry for another client is a separate window.
    expect(await registerVia('198.51.100.1, 203.0.113.8', 99)).toBe(201);
  });

  it('TRUST_PROXY=true means one hop as well', async () => {
    relay = await startRelay(db.url, { ...ROOMY_BUDGETS, TRUST_PROXY: 'true' });
    const statuses = await thirteenRegistrations((i) => `192.0.2.${i + 1}, 203.0.113.9`);
    expect(statuses[12]).toBe(429);
  });

  it('TRUST_PROXY=2: the entry the outer proxy appended (second from the right) is the client', async () => {
    relay = await startRelay(db.url, { ...ROOMY_BUDGETS, TRUST_PROXY: '2' });
    // forged, client (appended by the CDN), CDN (appended by the inner proxy)
    const statuses = await thirteenRegistrations((i) => `198.51.100.${i + 1}, 203.0.113.10, 10.0.0.${i + 1}`);
    expect(statuses.slice(0, 12)).toEqual(Array(12).fill(201));
    expect(statuses[12]).toBe(429);
    // A chain shorter than the hops came through fewer proxies: its leftmost entry is still ours.
    const short = await thirteenRegistrations(() => '203.0.113.11');
    expect(short[12]).toBe(429);
  });

  it('an entry that is not an address counts the socket peer, and TRUST_PROXY off ignores the header', async () => {
    relay = await startRelay(db.url, { ...ROOMY_BUDGETS, TRUST_PROXY: '1' });
    const statuses = await thirteenRegistrations((i) => `198.51.100.${i + 1}, not-an-address`);
    expect(statuses[12]).toBe(429);
    await relay.close();
    relay = await startRelay(db.url, { ...ROOMY_BUDGETS, TRUST_PROXY: '' });
    const ignored = await thirteenRegistrations((i) => `203.0.113.${i + 1}`);
    expect(ignored[12]).toBe(429);
  });

  it('a bad TRUST_PROXY stops the relay at boot with a message naming it', async () => {
    const results = await Promise.all(
      ['yes', '-1', '1.5'].map((value) =>
        runRelayAsync([], {
          PUBLIC_URL: 'https://relay.example.test',
          APNS_TOPIC: TOPIC,
          APNS_MODE: 'accept',
          DATABASE_URL: '',
          DATA_PATH: path.join(path.dirname(db.url), 'boot.sqlite'),
          TRUST_PROXY: value,
        }),
      ),
    );
    for (const result of results) {
      expect(result.status).not.toBe(0);
      expect(result.stderr).toContain('TRUST_PROXY must be');
    }
  });
});
