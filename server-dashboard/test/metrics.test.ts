/**
 * GET /metrics on a real host service (ephemeral port) delivering to a local relay double: request
 * counters by route pattern, the delivery queue's depth and retries, who may read it (standalone
 * token, dashboard credentials, CONDUIT_METRICS_TOKEN; never proxied to the dashboard), and that no
 * label ever carries a profile name, token or id.
 */
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  parsePrometheusText,
  PROMETHEUS_TEXT_CONTENT_TYPE,
  type PrometheusFamily,
} from '@conduit/contracts/prometheus';
import { silentLogger } from '../src/log.js';
import { TEST_TOKEN, tempHermesHome, testConfig } from './support/config.js';
import { FakeRelay } from './support/fake-relay.js';
import { callHook } from './support/hook-call.js';
import { startHost } from './support/host.js';
import { CREDENTIAL, GATEWAY_ID, INSTALLATION_ID, writePairing } from './support/pairing.js';

const PROFILE = 'zqprivateprofile';
const SESSION = 'session-metrics-7f3a9c';
const METRICS_TOKEN = 'scraper-only-token-0123456789abcdef';

let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  home = tempHermesHome();
  const profileHome = path.join(home.root, 'profiles', PROFILE);
  mkdirSync(profileHome, { recursive: true });
  relay = new FakeRelay();
  await relay.start();
  writePairing(profileHome, relay.url);
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});
afterAll(async () => {
  await relay.stop();
  home.cleanup();
});

async function host(overrides: Parameters<typeof testConfig>[1] = {}) {
  const started = await startHost(testConfig(home.root, overrides));
  closers.push(() => started.app.close());
  return started;
}

async function scrape(url: string, authorization?: string): Promise<Response> {
  return fetch(`${url}/metrics`, { headers: authorization ? { authorization } : {} });
}

async function families(url: string, authorization = `Bearer ${TEST_TOKEN}`): Promise<PrometheusFamily[]> {
  const response = await scrape(url, authorization);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe(PROMETHEUS_TEXT_CONTENT_TYPE);
  return parsePrometheusText(await response.text());
}

function value(all: PrometheusFamily[], name: string, labels: Record<string, string> = {}): number | undefined {
  return all
    .flatMap((f) => f.samples)
    .find((s) => s.name === name && Object.entries(labels).every(([label, v]) => s.labels[label] === v))?.value;
}

/** One finished turn through the hook endpoint, as Hermes' shell hooks report it: one response.ready. */
async function finishedTurn(url: string, hookToken: string): Promise<void> {
  const base = { session_id: SESSION, profile: PROFILE };
  const extra = { turn_id: `t-${SESSION}`, platform: 'cli', user_message: 'hello' };
  await callHook(url, hookToken, { hook_event_name: 'pre_llm_call', ...base, extra });
  await callHook(url, hookToken, {
    hook_event_name: 'post_llm_call',
    ...base,
    extra: { ...extra, assistant_response: 'hi' },
  });
  await callHook(url, hookToken, { hook_event_name: 'on_session_end', ...base, extra: { ...extra, completed: true } });
}

describe('GET /metrics on the host service', () => {
  it('shows the delivery queue depth while the relay fails, then the retries and the accepted attempt', async () => {
    let firstFailure!: () => void;
    const failed = new Promise<void>((resolve) => (firstFailure = resolve));
    // The queue logs the first failed attempt of an event; the test waits for that line.
    const log = {
      ...silentLogger,
      warn: (message: string) => {
        if (message === 'relay delivery failed; will retry') firstFailure();
      },
    };
    const service = await host({ log });
    const failures = 1000;
    // The relay answers 503 until the test lets it through: the event waits in the queue, retried.
    relay.scripted.push(...Array.from({ length: failures }, () => ({ status: 503, body: { error: 'unavailable' } })));
    const before = relay.events.length;
    await finishedTurn(service.url, service.hookToken);
    await failed;

    const waiting = await families(service.url);
    expect(value(waiting, 'conduit_host_delivery_queue_depth')).toBe(1);

    const consumed = failures - relay.scripted.length;
    relay.scripted.length = 0;
    await service.queue.whenIdle();
    expect(relay.events.length).toBeGreaterThan(before);

    const all = await families(service.url);
    expect(value(all, 'conduit_host_delivery_queue_depth')).toBe(0);
    // Every 503 answered before the relay was let through is one retry; then one accepted attempt.
    expect(consumed).toBeGreaterThan(0);
    expect(value(all, 'conduit_host_delivery_attempts_total', { outcome: 'retry' })).toBe(consumed);
    expect(value(all, 'conduit_host_delivery_attempts_total', { outcome: 'accepted' })).toBe(1);
    expect(value(all, 'conduit_host_delivery_attempts_total', { outcome: 'failed' })).toBe(0);
    expect(
      value(all, 'conduit_host_http_requests_total', { method: 'POST', route: '/_conduit/hook', status: '204' }),
    ).toBe(3);
    expect(
      value(all, 'conduit_host_http_request_duration_seconds_count', { method: 'POST', route: '/_conduit/hook' }),
    ).toBe(3);
    expect(value(all, 'conduit_host_http_requests_total', { method: 'GET', route: '/metrics', status: '200' })).toBe(1);
    expect(all.map((f) => f.name)).toEqual(
      expect.arrayContaining(['process_cpu_user_seconds_total', 'process_resident_memory_bytes']),
    );
  });

  it('no label value holds a profile name, session id, token, credential or id', async () => {
    const service = await host();
    await finishedTurn(service.url, service.hookToken);
    await service.queue.whenIdle();
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    expect(
      (await fetch(`${service.url}/api/plugins/conduit_push/cron/notifications?profile=${PROFILE}`, { headers: auth }))
        .status,
    ).toBe(200);
    // A credential in a path no route matches, and a wrong token on a matched route.
    expect((await fetch(`${service.url}/api/plugins/conduit_push/${CREDENTIAL}`, { headers: auth })).status).toBe(404);
    await fetch(`${service.url}/api/plugins/conduit_push/cron/notifications?profile=${PROFILE}`, {
      headers: { authorization: `Bearer ${CREDENTIAL}` },
    });
    const text = await (await scrape(service.url, `Bearer ${TEST_TOKEN}`)).text();
    for (const secret of [PROFILE, SESSION, TEST_TOKEN, service.hookToken, CREDENTIAL, INSTALLATION_ID, GATEWAY_ID]) {
      expect(text).not.toContain(secret);
    }
    const all = parsePrometheusText(text);
    const routes = new Set(all.flatMap((f) => f.samples.map((s) => s.labels['route'])).filter((r) => r !== undefined));
    expect(routes).toContain('/api/plugins/conduit_push/cron/notifications');
    expect(routes).toContain('unmatched');
    expect(
      value(all, 'conduit_host_http_requests_total', {
        route: '/api/plugins/conduit_push/cron/notifications',
        status: '401',
      }),
    ).toBe(1);
  });

  it('standalone: refuses a caller without the token, takes the standalone token or CONDUIT_METRICS_TOKEN', async () => {
    const service = await host({ metricsToken: METRICS_TOKEN });
    for (const authorization of [
      undefined,
      'Bearer wrong-token-0123456789',
      `Bearer ${METRICS_TOKEN}x`,
      METRICS_TOKEN,
    ]) {
      const answer = await scrape(service.url, authorization);
      expect(answer.status).toBe(401);
      expect(await answer.json()).toEqual({ error: 'unauthorized' });
    }
    await families(service.url, `Bearer ${TEST_TOKEN}`);
    await families(service.url, `Bearer ${METRICS_TOKEN}`);
    // The metrics token opens /metrics only, never a plugin route.
    const plugin = await fetch(`${service.url}/api/plugins/conduit_push/cron/notifications`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(plugin.status).toBe(401);
  });

  it('in front of a dashboard: checked against the dashboard, never proxied to it', async () => {
    const seen: string[] = [];
    const dashboard = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      if (req.url?.startsWith('/api/sessions')) {
        res.writeHead(req.headers.authorization === 'Bearer dashboard-login' ? 200 : 401).end('{}');
      } else res.writeHead(200, { 'content-type': 'text/plain' }).end('the dashboard');
    });
    await new Promise<void>((resolve) => dashboard.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => dashboard.close(() => resolve())));
    const dashboardUrl = `http://127.0.0.1:${(dashboard.address() as AddressInfo).port}`;
    const service = await host({ fronting: { mode: 'dashboard', dashboardUrl } });

    const refused = await scrape(service.url, 'Bearer not-a-login');
    expect(refused.status).toBe(401);
    await families(service.url, 'Bearer dashboard-login');
    // Spelled another way, it is still ours.
    const escaped = await fetch(`${service.url}/%6detrics`, { headers: { authorization: 'Bearer dashboard-login' } });
    expect(escaped.status).toBe(200);
    expect(seen.every((url) => url.startsWith('/api/sessions'))).toBe(true);
    // Everything else still goes to the dashboard.
    expect(await (await fetch(`${service.url}/some/page`)).text()).toBe('the dashboard');
  });

  it('a short CONDUIT_METRICS_TOKEN stops the service at boot, naming the variable', async () => {
    const { hostConfigFromEnv } = await import('../src/host-config.js');
    expect(() =>
      hostConfigFromEnv({ HERMES_HOME: home.root, CONDUIT_HOST_TOKEN: TEST_TOKEN, CONDUIT_METRICS_TOKEN: 'short' }),
    ).toThrow('CONDUIT_METRICS_TOKEN must be at least 16 characters');
  });
});
