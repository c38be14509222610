import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { createDashboardClient } from '@conduit/sdk/dashboard';
import { buildApp } from '../../src/app.js';
import { TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';

/**
 * A fake Hermes dashboard (spec/hermes/SURFACES.md §2): session-token auth on /api/*, public
 * /api/status, a streaming upload echo, a streamed download, and the /api/ws WebSocket.
 */
class FakeDashboard {
  probes = 0;
  down = false;
  server = http.createServer((req, res) => void this.handle(req, res));
  wss = new WebSocketServer({ noServer: true });
  url = '';

  async start() {
    this.server.on('upgrade', (req, socket, head) => {
      if (req.headers['x-hermes-session-token'] !== 'good' && !req.url?.includes('token=good')) {
        socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data) => ws.send(`echo:${data.toString()}`)));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop() {
    this.wss.close();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://x');
    if (this.down) return res.writeHead(500).end();
    if (url.pathname === '/api/status')
      return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    if (req.headers['x-hermes-session-token'] !== 'good') return res.writeHead(401).end('{"detail":"Unauthorized"}');
    if (url.pathname === '/api/sessions') {
      this.probes++;
      return res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
    }
    if (url.pathname === '/api/upload') {
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const chunk of req) {
        hash.update(chunk as Buffer);
        bytes += (chunk as Buffer).length;
      }
      return res.writeHead(201, { 'x-upstream': 'yes' }).end(JSON.stringify({ bytes, sha256: hash.digest('hex') }));
    }
    if (url.pathname === '/api/stream') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      setTimeout(() => res.end('data: second\n\n'), 50);
      return;
    }
    res.writeHead(404).end();
  }
}

let home: ReturnType<typeof tempHermesHome>;
let dashboard: FakeDashboard;

beforeEach(async () => {
  home = tempHermesHome();
  dashboard = new FakeDashboard();
  await dashboard.start();
});
afterEach(async () => {
  await dashboard.stop();
  home.cleanup();
});

async function fronting() {
  const app = await buildApp(testConfig(home.root, { fronting: { mode: 'dashboard', dashboardUrl: dashboard.url } }));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url };
}

describe('fronting the Hermes dashboard', () => {
  it('proxies other requests unchanged, streaming a large upload and an event stream', async () => {
    const { app, url } = await fronting();
    const status = await fetch(`${url}/api/status`);
    expect([status.status, await status.text()]).toEqual([200, '{"ok":true}']);
    const body = Buffer.alloc(4 * 1024 * 1024, 7);
    const upload = await fetch(`${url}/api/upload`, {
      method: 'POST',
      headers: { 'x-hermes-session-token': 'good' },
      body,
    });
    expect(upload.status).toBe(201);
    expect(upload.headers.get('x-upstream')).toBe('yes');
    expect(await upload.json()).toEqual({
      bytes: body.length,
      sha256: createHash('sha256').update(body).digest('hex'),
    });
    const stream = await fetch(`${url}/api/stream`, { headers: { 'x-hermes-session-token': 'good' } });
    const reader = stream.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toBe('data: first\n\n'); // arrived before the upstream finished
    await reader.cancel();
    const denied = await fetch(`${url}/api/upload`, { method: 'POST', body: 'x' });
    expect(denied.status).toBe(401);
    await app.close();
  });

  it('proxies WebSockets both ways, and passes the dashboard refusal through', async () => {
    const { app, url } = await fronting();
    const wsUrl = url.replace('http', 'ws') + '/api/ws?token=good';
    const ws = new WebSocket(wsUrl);
    const reply = await new Promise<string>((resolve, reject) => {
      ws.on('open', () => ws.send('ping'));
      ws.on('message', (data) => resolve(data.toString()));
      ws.on('error', reject);
    });
    expect(reply).toBe('echo:ping');
    ws.close();
    const refused = new WebSocket(url.replace('http', 'ws') + '/api/ws');
    const status = await new Promise<number>((resolve) =>
      refused.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status).toBe(401);
    await app.close();
  });

  it('accepts only callers the dashboard accepts, caches the verdict, and fails closed', async () => {
    const { app, url } = await fronting();
    const good = createDashboardClient({ baseUrl: url, headers: { 'x-hermes-session-token': 'good' } });
    const bad = createDashboardClient({ baseUrl: url, headers: { 'x-hermes-session-token': 'bad' } });
    const none = createDashboardClient({ baseUrl: url });
    expect((await good.GET('/api/plugins/conduit_push/cron/notifications')).response.status).toBe(200);
    expect((await good.GET('/api/plugins/conduit_push/notifications/reply-sources')).response.status).toBe(200);
    expect(dashboard.probes).toBe(1);
    expect((await bad.GET('/api/plugins/conduit_push/cron/notifications')).response.status).toBe(401);
    expect((await none.GET('/api/plugins/conduit_push/cron/notifications')).response.status).toBe(401);
    dashboard.down = true;
    const other = createDashboardClient({ baseUrl: url, headers: { 'x-hermes-session-token': 'good', cookie: 'x=1' } });
    const failing = await other.GET('/api/plugins/conduit_push/cron/notifications');
    expect([failing.response.status, failing.error]).toEqual([503, { error: 'dashboard_unavailable' }]);
    await dashboard.stop();
    const unreachable = await other.GET('/api/plugins/conduit_push/cron/notifications');
    expect(unreachable.response.status).toBe(503);
    await app.close();
    dashboard = new FakeDashboard();
    await dashboard.start();
  });
});

describe('standalone mode and profiles', () => {
  it('takes its own bearer token, and resolves ?profile= to <home>/profiles/<name> or answers 503', async () => {
    const app = await buildApp(testConfig(home.root));
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const client = createDashboardClient({ baseUrl: url, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    const wrong = createDashboardClient({ baseUrl: url, headers: { authorization: 'Bearer nope' } });
    expect((await wrong.GET('/api/plugins/conduit_push/cron/notifications')).response.status).toBe(401);
    const put = await client.PUT('/api/plugins/conduit_push/cron/notifications', {
      params: { query: { profile: 'work' } },
      body: { job_id: 'job7', notify: false },
    });
    expect(put.data).toEqual({ ok: true, muted: ['job7'] });
    expect(JSON.parse(readFileSync(path.join(home.root, 'profiles/work/conduit-cron.json'), 'utf8'))).toMatchObject({
      muted: ['job7'],
    });
    const root = await client.GET('/api/plugins/conduit_push/cron/notifications');
    expect(root.data).toEqual({ ok: true, muted: [] });
    const missing = await client.GET('/api/plugins/conduit_push/cron/notifications', {
      params: { query: { profile: 'nope' } },
    });
    expect(missing.response.status).toBe(503);
    expect(missing.error).toMatchObject({ error: 'profile_unavailable' });
    const evil = await client.GET('/api/plugins/conduit_push/cron/notifications', {
      params: { query: { profile: '../work' } },
    });
    expect(evil.response.status).toBe(503);
    const notProxied = await fetch(`${url}/api/status`);
    expect(notProxied.status).toBe(404);
    await app.close();
  });
});

describe('settings routes', () => {
  it('reply sources: all on by default; one turned off; bad input is a 400; a corrupt file is 503 and left alone', async () => {
    const app = await buildApp(testConfig(home.root));
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const client = createDashboardClient({ baseUrl: url, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    const initial = await client.GET('/api/plugins/conduit_push/notifications/reply-sources');
    expect(initial.data).toEqual({
      ok: true,
      sources: { conduit: true, desktop: true, messaging: true, terminal: true },
    });
    const off = await client.PUT('/api/plugins/conduit_push/notifications/reply-sources', {
      body: { source: 'desktop', notify: false },
    });
    expect(off.data?.sources).toEqual({ conduit: true, desktop: false, messaging: true, terminal: true });
    const badSource = await fetch(`${url}/api/plugins/conduit_push/notifications/reply-sources`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'fax', notify: false }),
    });
    expect([badSource.status, await badSource.json()]).toEqual([400, { error: 'invalid_source' }]);
    const badJson = await fetch(`${url}/api/plugins/conduit_push/cron/notifications`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
      body: '{nope',
    });
    expect(badJson.status).toBe(400);
    const badNotify = await client.PUT('/api/plugins/conduit_push/cron/notifications', {
      body: { job_id: 'j', notify: 'no' as unknown as boolean },
    });
    expect(badNotify.error).toEqual({ error: 'invalid_notify' });
    const file = path.join(home.root, 'conduit-notifications.json');
    writeFileSync(file, '{"reply_sources": [');
    const corrupt = await client.PUT('/api/plugins/conduit_push/notifications/reply-sources', {
      body: { source: 'desktop', notify: true },
    });
    expect(corrupt.response.status).toBe(503);
    expect(corrupt.error).toMatchObject({ error: 'state_file_corrupt' });
    expect(readFileSync(file, 'utf8')).toBe('{"reply_sources": [');
    await app.close();
  });
});
