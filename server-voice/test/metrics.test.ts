/**
 * GET /metrics on a real gateway (ephemeral port) with a real call (werift client, Opus both ways):
 * request counters by route pattern, active calls, the outbound pacing figures of the `pacing` log line,
 * who may read it (the API key or HERMES_REALTIME_METRICS_TOKEN), and that no label carries a call id
 * or key.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  parsePrometheusText,
  PROMETHEUS_TEXT_CONTENT_TYPE,
  type PrometheusFamily,
} from '@conduit/contracts/prometheus';
import { buildApp } from '../src/app.js';
import { ScriptedAgent } from '../src/agent/scripted-agent.js';
import { loadConfig, voiceConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../src/providers/scripted.js';
import { RealtimeClient } from '../src/testing/realtime-client.js';

const KEY = 'metrics-api-key-0123456789';
const METRICS_TOKEN = 'metrics-scraper-token-0123456789';

/** Log events as they are written; a test waits for the one it expects. */
const logged: Record<string, unknown>[] = [];
const waiters: { event: string; resolve: (line: Record<string, unknown>) => void }[] = [];
function nextLog(event: string): Promise<Record<string, unknown>> {
  return new Promise((resolve) => waiters.push({ event, resolve }));
}
const logger = createLogger({
  debug: false,
  write: (text) => {
    const line = JSON.parse(text) as Record<string, unknown>;
    logged.push(line);
    for (const waiter of waiters.filter((w) => w.event === line.event)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  },
});

let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  app = await buildApp(voiceConfig({ apiKey: KEY, metricsToken: METRICS_TOKEN }), {
    stt: new ScriptedSpeechToText(['hello']),
    tts: new ScriptedTextToSpeech({ samplesFor: (_text, rate) => rate }),
    agent: new ScriptedAgent(() => [{ delta: 'Hi.' }]),
    logger,
  });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

async function scrape(authorization?: string): Promise<Response> {
  return fetch(`${url}/metrics`, { headers: authorization ? { authorization } : {} });
}

async function families(authorization = `Bearer ${KEY}`): Promise<PrometheusFamily[]> {
  const response = await scrape(authorization);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe(PROMETHEUS_TEXT_CONTENT_TYPE);
  expect(response.headers.get('access-control-allow-origin')).toBe('*');
  return parsePrometheusText(await response.text());
}

function value(all: PrometheusFamily[], name: string, labels: Record<string, string> = {}): number | undefined {
  return all
    .flatMap((f) => f.samples)
    .find((s) => s.name === name && Object.entries(labels).every(([label, v]) => s.labels[label] === v))?.value;
}

describe('GET /metrics on the voice gateway', () => {
  it('counts requests by route pattern and status, and shows active calls and the pacing of a live call', async () => {
    for (let i = 0; i < 2; i++) {
      const found = await fetch(`${url}/v1/realtime/discovery`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(found.status).toBe(200);
    }
    expect((await fetch(`${url}/v1/realtime/discovery`)).status).toBe(401);

    const firstPacing = nextLog('pacing');
    const client = await RealtimeClient.connect({ baseUrl: url, apiKey: KEY });
    try {
      // The shared 20 ms clock ticks for the live call (speech or silence); its first 5 s window is logged.
      const pacing = await firstPacing;
      const during = await families();
      expect(value(during, 'conduit_voice_active_calls')).toBe(1);
      expect(value(during, 'conduit_voice_call_setups_in_progress')).toBe(0);
      for (const [tick, quantile, field] of [
        ['first', '0.5', 'first_jitter_p50_ms'],
        ['first', '0.99', 'first_jitter_p99_ms'],
        ['last', '0.5', 'last_jitter_p50_ms'],
        ['last', '0.99', 'last_jitter_p99_ms'],
        ['last', '1', 'last_jitter_max_ms'],
      ] as const) {
        // The same figures as the log line, in seconds.
        expect(value(during, 'conduit_voice_pacing_jitter_seconds', { sender: 'inline', tick, quantile })).toBeCloseTo(
          (pacing[field] as number) / 1000,
          6,
        );
      }
      expect(value(during, 'conduit_voice_pacing_intervals_total', { sender: 'inline' })).toBe(pacing.intervals);
      expect(
        value(during, 'conduit_voice_http_requests_total', {
          method: 'POST',
          route: '/v1/realtime/calls',
          status: '201',
        }),
      ).toBe(1);
      expect(
        value(during, 'conduit_voice_http_requests_total', {
          method: 'GET',
          route: '/v1/realtime/discovery',
          status: '200',
        }),
      ).toBe(2);
      expect(
        value(during, 'conduit_voice_http_requests_total', {
          method: 'GET',
          route: '/v1/realtime/discovery',
          status: '401',
        }),
      ).toBe(1);
      expect(
        value(during, 'conduit_voice_http_request_duration_seconds_count', { route: '/v1/realtime/discovery' }),
      ).toBeGreaterThanOrEqual(2);

      // No call id, key or address anywhere in the exposition.
      const text = await (await scrape(`Bearer ${KEY}`)).text();
      expect(client.callId).toMatch(/^call_[0-9a-f]{32}$/);
      for (const secret of [client.callId, client.callId.slice(5), KEY, METRICS_TOKEN, '127.0.0.1']) {
        expect(text).not.toContain(secret);
      }
    } finally {
      const closed = nextLog('call_closed');
      await client.close();
      await closed;
    }
    const after = await families();
    expect(value(after, 'conduit_voice_active_calls')).toBe(0);
    expect(after.map((f) => f.name)).toEqual(
      expect.arrayContaining(['process_cpu_user_seconds_total', 'process_resident_memory_bytes']),
    );
  }, 60_000);

  it('a path no route matches is counted as unmatched, never by its path', async () => {
    const secretPath = `/v1/realtime/calls/call_${'ab'.repeat(16)}/${KEY}`;
    expect((await fetch(`${url}${secretPath}`)).status).toBe(404);
    const text = await (await scrape(`Bearer ${KEY}`)).text();
    expect(text).not.toContain('ab'.repeat(16));
    expect(
      value(parsePrometheusText(text), 'conduit_voice_http_requests_total', { route: 'unmatched', status: '404' }),
    ).toBe(1);
  });

  it('answers 401 unauthorized without the API key or the metrics token; the metrics token opens nothing else', async () => {
    for (const authorization of [undefined, 'Bearer wrong', `Bearer ${KEY}x`, KEY]) {
      const answer = await scrape(authorization);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await answer.text()).toBe('unauthorized');
    }
    await families(`Bearer ${METRICS_TOKEN}`);
    const discovery = await fetch(`${url}/v1/realtime/discovery`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(discovery.status).toBe(401);
  });

  it('HERMES_REALTIME_METRICS_TOKEN is read from the environment; a short one stops startup', () => {
    expect(
      loadConfig({ HERMES_REALTIME_API_KEY: KEY, HERMES_REALTIME_METRICS_TOKEN: METRICS_TOKEN }).metricsToken,
    ).toBe(METRICS_TOKEN);
    expect(loadConfig({ HERMES_REALTIME_API_KEY: KEY }).metricsToken).toBeUndefined();
    expect(() => loadConfig({ HERMES_REALTIME_API_KEY: KEY, HERMES_REALTIME_METRICS_TOKEN: 'short' })).toThrow(
      'HERMES_REALTIME_METRICS_TOKEN must be at least 16 characters.',
    );
  });
});
