import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hermesApiClient } from '../../src/hermes/api-client.js';
import type { HermesRunEvent } from '../../src/hermes/runs.js';

/** Records every request; answers from the handler the test sets. */
class RecordingServer {
  readonly requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) => res.writeHead(404).end();
  readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      this.handler(req, res);
    });
  });
  url = '';
  async start() {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  stop() {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(resolve));
  }
}

let hermes: RecordingServer;
beforeEach(async () => {
  hermes = new RecordingServer();
  await hermes.start();
});
afterEach(async () => {
  await hermes.stop();
});

describe('the Hermes API client', () => {
  it("keeps a secondary profile's /p/<profile> prefix on every call, with the bearer key", async () => {
    hermes.handler = (req, res) => {
      if (req.url?.endsWith('/events')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: {"event":"run.completed"}\n\n');
      } else if (req.url === '/p/work/v1/runs') {
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"run_id":"run_1","status":"queued"}');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }
    };
    const api = hermesApiClient({ url: `${hermes.url}/p/work/`, key: 'k', timeoutMs: 2000 });
    expect(await api.startRun({ input: 'hi' }, { idempotencyKey: 'key-1', sessionId: 's1' })).toEqual({
      outcome: 'started',
      runId: 'run_1',
    });
    const stream = await api.runEvents('run_1');
    const events: HermesRunEvent[] = [];
    if (stream.outcome === 'streaming') for await (const e of stream.events) events.push(e);
    expect(events).toEqual([{ event: 'run.completed' }]);
    expect(await api.answerApproval('run_1', 'once', 'req-1')).toBe('accepted');
    expect(await api.stopRun('run_1')).toBe(true);
    expect(hermes.requests.map((r) => [r.method, r.url, r.headers.authorization])).toEqual([
      ['POST', '/p/work/v1/runs', 'Bearer k'],
      ['GET', '/p/work/v1/runs/run_1/events', 'Bearer k'],
      ['POST', '/p/work/v1/runs/run_1/approval', 'Bearer k'],
      ['POST', '/p/work/v1/runs/run_1/stop', 'Bearer k'],
    ]);
    const [run, , approval] = hermes.requests;
    expect([run?.headers['idempotency-key'], run?.headers['x-hermes-session-id'], JSON.parse(run?.body ?? '')]).toEqual(
      ['key-1', 's1', { input: 'hi' }],
    );
    expect(JSON.parse(approval?.body ?? '')).toEqual({ choice: 'once', request_id: 'req-1' });
  });

  it('never follows a redirect, so the key never travels to another address', async () => {
    hermes.handler = (_req, res) => res.writeHead(307, { location: 'http://127.0.0.2:9/elsewhere' }).end();
    const api = hermesApiClient({ url: hermes.url, key: 'k', timeoutMs: 2000 });
    expect(await api.startRun({ input: 'hi' })).toEqual({ outcome: 'refused', status: 307 });
    expect(await api.runEvents('r')).toEqual({ outcome: 'refused', status: 307 });
    expect(await api.answerApproval('r', 'deny', undefined)).toBe('refused');
    expect(await api.stopRun('r')).toBe(false);
    expect(hermes.requests).toHaveLength(4);
  });

  it('sends no Authorization header without a key', async () => {
    hermes.handler = (_req, res) => res.writeHead(200).end();
    await hermesApiClient({ url: hermes.url, key: null }).stopRun('r');
    expect(hermes.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('the request timeout never cuts an event stream that is only sending keepalives', async () => {
    hermes.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': keepalive\n\n');
      setTimeout(() => res.end('data: {"event":"run.completed","output":"late"}\n\n'), 400);
    };
    const api = hermesApiClient({ url: hermes.url, key: 'k', timeoutMs: 100 });
    const stream = await api.runEvents('r');
    const events: HermesRunEvent[] = [];
    if (stream.outcome === 'streaming') for await (const e of stream.events) events.push(e);
    expect(events).toEqual([{ event: 'run.completed', output: 'late' }]);
  });

  it('maps the answers to a run start: 409 is a key conflict, a 2xx without run_id is malformed', async () => {
    const answers = [
      [409, '{"error":"idempotency_key_conflict"}'],
      [200, '{"status":"queued"}'],
      [429, '{"error":"too_many_runs"}'],
    ] as const;
    let next = 0;
    hermes.handler = (_req, res) => {
      const [status, body] = answers[next++] ?? [500, ''];
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    };
    const api = hermesApiClient({ url: hermes.url, key: 'k' });
    expect(await api.startRun({ input: 'a' })).toEqual({ outcome: 'key_conflict' });
    expect(await api.startRun({ input: 'b' })).toEqual({ outcome: 'malformed' });
    expect(await api.startRun({ input: 'c' })).toEqual({ outcome: 'refused', status: 429 });
    const down = hermesApiClient({ url: 'http://127.0.0.1:9', key: 'k' });
    expect((await down.startRun({ input: 'd' })).outcome).toBe('unreachable');
    expect((await down.runEvents('r')).outcome).toBe('unreachable');
  });

  it('yields the events runs.ts declares, skipping keepalives, [DONE], unreadable frames and other names', async () => {
    hermes.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        ': keepalive\n\n' +
          'id: 1\ndata: {"event":"message.delta","run_id":"r","delta":"Hi"}\n\n' +
          'data: {"event":"tool.started","tool":"search","preview":"q"}\n\n' +
          'data: {"event":"hermes.someday","x":1}\n\n' +
          'data: not json\n\n' +
          'data: [DONE]\n\n' +
          'data: {"no":"event"}\n\n' +
          'data: {"event":"run.completed","output":7}\n\n' +
          ': stream closed\n\n',
      );
    };
    const stream = await hermesApiClient({ url: hermes.url, key: 'k' }).runEvents('r');
    const events: HermesRunEvent[] = [];
    if (stream.outcome === 'streaming') for await (const e of stream.events) events.push(e);
    expect(events.map((e) => e.event)).toEqual(['message.delta', 'tool.started', 'run.completed']);
    expect(events[0]).toMatchObject({ delta: 'Hi', run_id: 'r' });
    // An output that is not text reads as absent; the run still ends.
    expect(events[2]).toEqual({ event: 'run.completed', output: undefined });
  });

  it('drops a last event the stream ends in the middle of (no blank line after it)', async () => {
    hermes.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"event":"message.delta","delta":"a"}\n\ndata: {"event":"run.completed","output":"a"}\n');
    };
    const stream = await hermesApiClient({ url: hermes.url, key: 'k' }).runEvents('r');
    const events: HermesRunEvent[] = [];
    if (stream.outcome === 'streaming') for await (const e of stream.events) events.push(e);
    expect(events.map((e) => e.event)).toEqual(['message.delta']);
  });

  it("a caller's signal gives up on a run start and ends an event stream, yielding nothing after the abort", async () => {
    const start = new AbortController();
    hermes.handler = (req, res) => {
      // The run start never answers: the caller gives up once Hermes has it.
      if (req.url === '/v1/runs') return start.abort();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"event":"message.delta","delta":"one"}\n\ndata: {"event":"message.delta","delta":"two"}\n\n');
    };
    const api = hermesApiClient({ url: hermes.url, key: 'k' });
    expect((await api.startRun({ input: 'x' }, { signal: start.signal })).outcome).toBe('unreachable');

    const reading = new AbortController();
    const stream = await api.runEvents('r', { signal: reading.signal });
    const deltas: unknown[] = [];
    if (stream.outcome === 'streaming')
      for await (const e of stream.events) {
        deltas.push(e.event === 'message.delta' ? e.delta : e.event);
        reading.abort();
      }
    expect(deltas).toEqual(['one']);
  });
});
