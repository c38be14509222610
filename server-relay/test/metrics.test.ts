/**
 * GET /metrics on a real relay (SQLite, ephemeral port) whose APNs pushes go through the HTTP/2 sender
 * to the local APNs simulator: the counters after real requests and pushes, the exposure rule (the
 * unknown-route answer for anyone without METRICS_TOKEN), and that no label ever carries a token or id.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayClient } from '@conduit/sdk/relay';
import {
  parsePrometheusText,
  PROMETHEUS_TEXT_CONTENT_TYPE,
  type PrometheusFamily,
} from '@conduit/contracts/prometheus';
import { buildApp } from '../src/app.js';
import { Http2ApnsSender } from '../src/apns/index.js';
import { ApnsSimulator } from '../src/apns/simulator.js';
import { openPrismaStore, type PrismaStore } from '../src/store/prisma-store.js';
import { providerKeyPair } from './apns/keys.js';
import { nextIp, ROOMY_BUDGETS, testConfig, testDatabase, TOPIC } from './support/harness.js';

const KEY_ID = 'METRICSKEY';
const TEAM_ID = 'METRICSTEAM';
const METRICS_TOKEN = randomBytes(32).toString('base64url');
const key = providerKeyPair();

interface RunningRelay {
  app: FastifyInstance;
  baseUrl: string;
  client: ReturnType<typeof createRelayClient>;
  /** Resolves once the access-log line of `method path` was written (the request's onResponse hooks ran). */
  answered(method: string, path: string): Promise<void>;
  close(): Promise<void>;
}

let simulator: ApnsSimulator;
let database: { url: string; release: () => Promise<void> };
let store: PrismaStore;
let relay: RunningRelay;

async function startRelay(env: Record<string, string>): Promise<RunningRelay> {
  const lines: { method: string; path: string }[] = [];
  const waiters: { method: string; path: string; resolve: () => void }[] = [];
  const apns = new Http2ApnsSender(
    { keyPem: key.privatePem, keyId: KEY_ID, teamId: TEAM_ID, origin: simulator.origin, ca: simulator.ca },
    TOPIC,
  );
  // The configured APNs seam is never used: the injected sender talks HTTP/2 to the simulator.
  const app = await buildApp(testConfig(database.url, { ...ROOMY_BUDGETS, ...env }), {
    store,
    apns,
    log: () => undefined,
    accessLog: (line) => {
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.method === line.method && w.path === line.path)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    },
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    app,
    baseUrl,
    client: createRelayClient({ baseUrl }),
    // The access log and the metrics both observe a request when its answer has gone out; the log line
    // comes first, so a scrape after it sees the request counted.
    answered: (method, path) =>
      lines.some((l) => l.method === method && l.path === path)
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ method, path, resolve })),
    close: () => app.close(),
  };
}

async function scrape(target: RunningRelay, authorization?: string): Promise<Response> {
  return fetch(`${target.baseUrl}/metrics`, { headers: authorization ? { authorization } : {} });
}

async function families(target: RunningRelay): Promise<PrometheusFamily[]> {
  const response = await scrape(target, `Bearer ${METRICS_TOKEN}`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe(PROMETHEUS_TEXT_CONTENT_TYPE);
  return parsePrometheusText(await response.text());
}

function value(all: PrometheusFamily[], name: string, labels: Record<string, string>): number | undefined {
  const family = all.find((f) => name === f.name || name.startsWith(`${f.name}_`));
  return family?.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([label, v]) => s.labels[label] === v),
  )?.value;
}

const hexToken = () => randomBytes(32).toString('hex');

/** A phone registered with `deviceToken` and one paired host; returns every secret and id involved. */
async function pairedPhone(deviceToken: string) {
  const { client } = relay;
  const registered = await client.POST('/v1/installations', {
    headers: { 'x-forwarded-for': nextIp() },
    body: { bundle_id: TOPIC, device_token: deviceToken, environment: 'production' },
  });
  if (!registered.data) throw new Error(`register failed: ${registered.response.status}`);
  const { installation, credential } = registered.data;
  const pairing = await client.POST('/v1/installations/{id}/pairings', {
    params: { path: { id: installation.id } },
    headers: { authorization: `Bearer ${credential}` },
    body: {},
  });
  if (!pairing.data) throw new Error(`pairing failed: ${pairing.response.status}`);
  const claim = await client.POST('/v1/pairings/claim', {
    headers: { 'x-forwarded-for': nextIp() },
    body: { pairing_code: pairing.data.pairing_code, gateway_name: 'Metrics host' },
  });
  if (!claim.data) throw new Error(`claim failed: ${claim.response.status}`);
  return {
    installationId: installation.id,
    deviceCredential: credential,
    pairingCode: pairing.data.pairing_code,
    gatewayId: claim.data.gateway_id,
    gatewayCredential: claim.data.credential,
  };
}

beforeAll(async () => {
  simulator = await ApnsSimulator.start({ publicKey: key.publicPem, keyId: KEY_ID, teamId: TEAM_ID });
  database = await testDatabase('sqlite');
  store = await openPrismaStore(database.url);
  relay = await startRelay({ METRICS_TOKEN });
}, 60_000);

afterAll(async () => {
  await relay?.close();
  await store?.close();
  await database?.release();
  await simulator?.close();
});

describe('GET /metrics on the relay', () => {
  it('counts requests by route pattern and status, with latency histograms, and APNs results by reason', async () => {
    const { client } = relay;
    const accepted = await pairedPhone(hexToken());
    const goneToken = hexToken();
    simulator.answerFor(goneToken, { status: 410, reason: 'Unregistered', timestamp: Date.now() });
    const gone = await pairedPhone(goneToken);
    const oddToken = hexToken();
    simulator.answerFor(oddToken, { status: 400, reason: 'SomeReasonAppleAddsLater' });
    const odd = await pairedPhone(oddToken);

    for (const [phone, status] of [
      [accepted, 202],
      [gone, 502],
      [odd, 502],
    ] as const) {
      const sent = await client.POST('/v1/events', {
        headers: { authorization: `Bearer ${phone.gatewayCredential}` },
        body: { type: 'response.ready', event_id: `evt-metrics-${phone.gatewayId}` },
      });
      expect(sent.response.status).toBe(status);
    }
    for (let i = 0; i < 3; i++) expect((await client.GET('/healthz')).response.status).toBe(200);
    await relay.answered('GET', '/healthz');
    await relay.answered('POST', '/v1/events');

    const all = await families(relay);
    expect(value(all, 'conduit_relay_http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(
      3,
    );
    expect(
      value(all, 'conduit_relay_http_requests_total', { method: 'POST', route: '/v1/installations', status: '201' }),
    ).toBe(3);
    expect(
      value(all, 'conduit_relay_http_requests_total', {
        method: 'POST',
        route: '/v1/installations/:id/pairings',
        status: '201',
      }),
    ).toBe(3);
    expect(
      value(all, 'conduit_relay_http_requests_total', { method: 'POST', route: '/v1/events', status: '202' }),
    ).toBe(1);
    expect(
      value(all, 'conduit_relay_http_requests_total', { method: 'POST', route: '/v1/events', status: '502' }),
    ).toBe(2);
    expect(value(all, 'conduit_relay_http_request_duration_seconds_count', { route: '/healthz', status: '200' })).toBe(
      3,
    );
    expect(
      value(all, 'conduit_relay_http_request_duration_seconds_bucket', {
        route: '/healthz',
        status: '200',
        le: '+Inf',
      }),
    ).toBe(3);
    expect(
      value(all, 'conduit_relay_apns_pushes_total', { push_type: 'alert', result: 'accepted', reason: 'none' }),
    ).toBe(1);
    expect(
      value(all, 'conduit_relay_apns_pushes_total', { push_type: 'alert', result: 'refused', reason: 'Unregistered' }),
    ).toBe(1);
    // A reason outside Apple's documented list is never a label value of its own.
    expect(
      value(all, 'conduit_relay_apns_pushes_total', { push_type: 'alert', result: 'refused', reason: 'other' }),
    ).toBe(1);
    expect(value(all, 'conduit_relay_apns_push_duration_seconds_count', { push_type: 'alert' })).toBe(3);
    expect(simulator.requests.length).toBe(3);
    // Node's process figures, from the process-wide collector.
    expect(all.map((f) => f.name)).toEqual(
      expect.arrayContaining([
        'process_cpu_user_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_eventloop_lag_seconds',
      ]),
    );
  });

  it('no label value ever holds a token, credential, pairing code or id, even of a path that carries one', async () => {
    const deviceToken = hexToken();
    const phone = await pairedPhone(deviceToken);
    const deviceAuth = { authorization: `Bearer ${phone.deviceCredential}` };
    // A token in a route parameter, a device token in a path no route matches, an id in a matched path.
    const liveActivityToken = hexToken();
    await relay.client.DELETE('/v1/live-activities/{push_token}', {
      params: { path: { push_token: liveActivityToken } },
      headers: deviceAuth,
    });
    const unknown = await fetch(`${relay.baseUrl}/v1/devices/${deviceToken}?credential=${phone.deviceCredential}`);
    expect(unknown.status).toBe(404);
    await relay.client.GET('/v1/meta', { headers: deviceAuth });
    await relay.answered('GET', '/v1/meta');

    const text = await (await scrape(relay, `Bearer ${METRICS_TOKEN}`)).text();
    const secrets = [
      deviceToken,
      liveActivityToken,
      phone.deviceCredential,
      phone.gatewayCredential,
      phone.installationId,
      phone.gatewayId,
      phone.pairingCode,
      METRICS_TOKEN,
      '127.0.0.1',
    ];
    for (const secret of secrets) expect(text).not.toContain(secret);
    const all = parsePrometheusText(text);
    const labelValues = all.flatMap((f) => f.samples.flatMap((s) => Object.values(s.labels)));
    for (const secret of secrets) expect(labelValues.some((v) => v.includes(secret))).toBe(false);
    const routes = new Set(all.flatMap((f) => f.samples.map((s) => s.labels['route']).filter((r) => r !== undefined)));
    expect(routes).toContain('/v1/live-activities/:push_token');
    expect(routes).toContain('unmatched');
    // Every route label is `unmatched` or a declared pattern: parameters by name, no long hex or base64 runs.
    for (const route of routes) {
      expect(route === 'unmatched' || /^\/[A-Za-z0-9/_:.-]*$/.test(route)).toBe(true);
      expect(route).not.toMatch(/[0-9a-f]{16,}|[A-Za-z0-9_-]{30,}/);
    }
    expect(value(all, 'conduit_relay_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(
      1,
    );
  });

  it('answers anyone without the token exactly as an unknown route', async () => {
    const unknownRoute = await fetch(`${relay.baseUrl}/no-such-route`);
    const answers = [
      await scrape(relay),
      await scrape(relay, 'Bearer wrong-token'),
      await scrape(relay, `Bearer ${METRICS_TOKEN}x`),
      await scrape(relay, METRICS_TOKEN),
      await scrape(relay, `Basic ${Buffer.from(`x:${METRICS_TOKEN}`).toString('base64')}`),
    ];
    const expectedBody = await unknownRoute.text();
    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect(await answer.text()).toBe(expectedBody);
      for (const header of ['content-type', 'cache-control', 'x-content-type-options', 'content-length']) {
        expect(answer.headers.get(header)).toBe(unknownRoute.headers.get(header));
      }
    }
  });

  it('without METRICS_TOKEN the route does not exist, whatever the caller presents', async () => {
    const closed = await startRelay({});
    try {
      const answer = await scrape(closed, `Bearer ${METRICS_TOKEN}`);
      expect(answer.status).toBe(404);
      expect(await answer.json()).toEqual({ error: 'not_found' });
    } finally {
      await closed.close();
    }
  });

  it('each app counts only its own requests (one registry per app)', async () => {
    const other = await startRelay({ METRICS_TOKEN });
    try {
      const all = await families(other);
      expect(value(all, 'conduit_relay_http_requests_total', { route: '/healthz' })).toBeUndefined();
      expect(value(all, 'conduit_relay_apns_pushes_total', { result: 'accepted' })).toBeUndefined();
    } finally {
      await other.close();
    }
  });
});

describe('METRICS_TOKEN', () => {
  it('a short token stops the relay at boot, naming the variable', () => {
    expect(() => testConfig('/unused.sqlite', { METRICS_TOKEN: 'short' })).toThrow(
      'METRICS_TOKEN must be at least 32 characters.',
    );
  });
});
