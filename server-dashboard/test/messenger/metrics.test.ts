/**
 * The messenger inbox's backlog on `/metrics`, served where the inbox lives: the connector's own process,
 * on 127.0.0.1 with its token. In process against a real inbox (exact figures per row state), and the
 * connector CLI as a real process with CONDUIT_MESSENGER_METRICS_PORT.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parsePrometheusText, PROMETHEUS_TEXT_CONTENT_TYPE } from '@conduit/contracts/prometheus';
import { readMessengerConfig } from '../../src/messenger/config.js';
import { Inbox } from '../../src/messenger/inbox.js';
import { serveMessengerMetrics, type MetricsListener } from '../../src/messenger/metrics.js';
import { inboundMessage } from './fakes/fake-relay.js';
import { RELAY_TOKEN, startFakes, type Fakes } from './harness.js';
import { spawnConnector } from './process.js';

const METRICS_TOKEN = 'messenger-metrics-token-0123456789';

let fakes: Fakes;
const closers: (() => Promise<void> | void)[] = [];

beforeEach(async () => {
  fakes = await startFakes();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await fakes.close();
});

function gauge(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return parsePrometheusText(text)
    .flatMap((f) => f.samples)
    .find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

describe('messenger inbox metrics', () => {
  it('counts the inbox rows by state and the age of the oldest waiting one; no chat, contact or event id', async () => {
    const inbox = Inbox.open({ stateDir: fakes.stateDir, apiOrigin: fakes.relay.url, agentToken: RELAY_TOKEN });
    closers.push(() => inbox.close());
    const chatId = randomUUID();
    const senderId = randomUUID();
    const events = [1, 2, 3, 4].map(() => inboundMessage({ chatId, senderId }));
    events.forEach((event, i) => inbox.accept(BigInt(i + 1), event as never));
    const taken = inbox.nextPending();
    const completed = inbox.nextPending();
    inbox.complete([String(completed?.eventId)]);
    const listener: MetricsListener = await serveMessengerMetrics({ inbox, port: 0, token: METRICS_TOKEN });
    closers.push(() => listener.close());
    expect(listener.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const response = await fetch(`${listener.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(PROMETHEUS_TEXT_CONTENT_TYPE);
    const text = await response.text();
    expect(gauge(text, 'conduit_messenger_inbox_events', { status: 'pending' })).toBe(2);
    expect(gauge(text, 'conduit_messenger_inbox_events', { status: 'processing' })).toBe(1);
    expect(gauge(text, 'conduit_messenger_inbox_events', { status: 'completed' })).toBe(1);
    expect(gauge(text, 'conduit_messenger_inbox_events', { status: 'held' })).toBe(0);
    expect(gauge(text, 'conduit_messenger_inbox_oldest_waiting_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(gauge(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    for (const secret of [chatId, senderId, String(taken?.eventId), ...events.map((e) => String(e['event_id']))]) {
      expect(text).not.toContain(secret);
    }
    expect(text).not.toContain(RELAY_TOKEN);
  });

  it('answers only GET /metrics, and only with the token', async () => {
    const inbox = Inbox.open({ stateDir: fakes.stateDir, apiOrigin: fakes.relay.url, agentToken: RELAY_TOKEN });
    closers.push(() => inbox.close());
    const listener = await serveMessengerMetrics({ inbox, port: 0, token: METRICS_TOKEN });
    closers.push(() => listener.close());
    for (const authorization of [undefined, 'Bearer wrong', `Bearer ${METRICS_TOKEN}x`, METRICS_TOKEN, 'Bearer ']) {
      const answer = await fetch(`${listener.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(answer.status).toBe(401);
      expect(await answer.json()).toEqual({ error: 'unauthorized' });
    }
    const elsewhere = await fetch(`${listener.url}/`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(elsewhere.status).toBe(404);
  });

  it('the connector process serves them on loopback with CONDUIT_MESSENGER_METRICS_PORT', async () => {
    const p = spawnConnector(
      'start',
      fakes.env({ CONDUIT_MESSENGER_METRICS_PORT: '0', CONDUIT_MESSENGER_METRICS_TOKEN: METRICS_TOKEN }),
    );
    closers.push(async () => {
      p.child.kill('SIGTERM');
      await p.exited;
    });
    // The process logs where it listens; the test waits for that line.
    const url = await new Promise<string>((resolve, reject) => {
      const look = () => {
        const line = p
          .output()
          .split('\n')
          .find((l) => l.includes('relay messenger metrics listening'));
        if (line) resolve((JSON.parse(line) as { url: string }).url);
      };
      p.child.stdout?.on('data', look);
      p.child.stderr?.on('data', look);
      void p.exited.then((code) => reject(new Error(`connector exited ${code}: ${p.output()}`)));
      look();
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const text = await (
      await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    expect(gauge(text, 'conduit_messenger_inbox_events', { status: 'pending' })).toBe(0);
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    expect(p.output()).not.toContain(METRICS_TOKEN);
  }, 60_000);

  it('a metrics port without a token of 16 characters is refused', () => {
    expect(() => readMessengerConfig(fakes.env({ CONDUIT_MESSENGER_METRICS_PORT: '9300' }), '/tmp')).toThrow(
      'CONDUIT_MESSENGER_METRICS_TOKEN (at least 16 characters) must be set with CONDUIT_MESSENGER_METRICS_PORT',
    );
    expect(() =>
      readMessengerConfig(
        fakes.env({ CONDUIT_MESSENGER_METRICS_PORT: 'x', CONDUIT_MESSENGER_METRICS_TOKEN: METRICS_TOKEN }),
        '/tmp',
      ),
    ).toThrow('CONDUIT_MESSENGER_METRICS_PORT must be a port number');
    expect(readMessengerConfig(fakes.env(), '/tmp').metrics).toBeUndefined();
  });
});
