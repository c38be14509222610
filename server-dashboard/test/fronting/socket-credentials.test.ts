import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { memoryLogger } from '../../src/log.js';
import { tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { openClient, RealtimeStandIn, XAI_FIRST_EVENT, xaiHandshake } from '../support/realtime-stand-ins.js';

const SESSION_TOKEN = 'dashboard-session-token-0123456789';
const API_KEY = 'xai-key-for-the-dashboard-mode-test-42';
const SOCKET = '/api/plugins/conduit_push/grok-live/socket';

/**
 * A Hermes dashboard as SURFACES.md describes its auth: `X-Hermes-Session-Token` on /api/*, and
 * `POST /api/auth/ws-ticket` minting a single-use WebSocket ticket for a signed-in caller
 * (`{ticket, ttl_seconds}`). It reports each ticket it mints.
 */
class TicketDashboard {
  readonly minted: string[] = [];
  url = '';
  private readonly server = http.createServer((req, res) => {
    if (req.headers['x-hermes-session-token'] !== SESSION_TOKEN) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"detail":"Unauthorized"}');
      return;
    }
    const pathname = new URL(req.url ?? '/', 'http://dashboard').pathname;
    if (req.method === 'POST' && pathname === '/api/auth/ws-ticket') {
      const ticket = randomBytes(32).toString('base64url');
      this.minted.push(ticket);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ticket, ttl_seconds: 30 }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const home = tempHermesHome();
const dashboard = new TicketDashboard();
const xai = new RealtimeStandIn(xaiHandshake(API_KEY), XAI_FIRST_EVENT);
const log = memoryLogger();
let host: Host & { url: string };

beforeAll(async () => {
  writeFileSync(path.join(home.root, '.env'), `XAI_API_KEY=${API_KEY}\n`);
  await dashboard.start();
  await xai.start();
  host = await startHost(
    testConfig(home.root, {
      fronting: { mode: 'dashboard', dashboardUrl: dashboard.url },
      log,
      upstreams: { xai: xai.url },
    }),
  );
});
afterAll(async () => {
  await host.app.close();
  await xai.stop();
  await dashboard.stop();
  home.cleanup();
});

function socketUrl(query: string): string {
  return `${host.url.replace(/^http/, 'ws')}${SOCKET}?${query}`;
}

describe('the dashboard WebSocket credential, in front of a dashboard', () => {
  it('accepts a ticket the dashboard minted through this service, once', async () => {
    const response = await fetch(`${host.url}/api/auth/ws-ticket`, {
      method: 'POST',
      headers: { 'x-hermes-session-token': SESSION_TOKEN, 'content-type': 'application/json' },
    });
    // The dashboard's answer passes through unchanged.
    const body = (await response.json()) as { ticket: string; ttl_seconds: number };
    expect(body).toEqual({ ticket: dashboard.minted[0], ttl_seconds: 30 });

    const client = openClient(socketUrl(`ticket=${body.ticket}`));
    const upstream = await xai.connections.next();
    expect(upstream.handshake.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(await client.opened).toBeNull();
    client.socket.close();
    await client.closed;

    const again = openClient(socketUrl(`ticket=${body.ticket}`));
    expect(await again.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });
  });

  it("refuses a ticket the dashboard never minted, and one it refused to mint (the caller's token was wrong)", async () => {
    const refused = await fetch(`${host.url}/api/auth/ws-ticket`, {
      method: 'POST',
      headers: { 'x-hermes-session-token': 'wrong', 'content-type': 'application/json' },
    });
    expect(refused.status).toBe(401);
    const invented = openClient(socketUrl(`ticket=${randomBytes(32).toString('base64url')}`));
    expect(await invented.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });
  });

  it("takes a loopback dashboard's session token as ?token=, checked by the dashboard", async () => {
    const good = openClient(socketUrl(`token=${SESSION_TOKEN}`));
    await xai.connections.next();
    expect(await good.opened).toBeNull();
    good.socket.close();
    await good.closed;
    const bad = openClient(socketUrl('token=not-the-session-token'));
    expect(await bad.closed).toEqual({ code: 4401, reason: 'Dashboard sign-in required' });
  });

  it('never logs a ticket or the session token', () => {
    for (const line of log.lines) {
      expect(line).not.toContain(SESSION_TOKEN);
      for (const ticket of dashboard.minted) expect(line).not.toContain(ticket);
    }
  });
});
