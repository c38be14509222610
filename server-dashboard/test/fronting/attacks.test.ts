import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startServerProcess, type ServerProcess } from '@conduit/contracts/testing';
import { writePairing } from '../support/pairing.js';

/**
 * The attacks of the security review, performed against a real host-service process: raw sockets for
 * what fetch cannot send (absolute-form targets, unfinished headers and bodies), a stand-in Hermes
 * dashboard that guards its Host header as Hermes' own does.
 */
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const TSX = path.join(REPO, 'node_modules/.bin/tsx');
const MAIN = path.join(REPO, 'server-dashboard/src/main.ts');
const TOKEN = 'attack-test-standalone-token-0123456789';
const PREFIX = '/api/plugins/conduit_push';

interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

/** Writes `request` on a fresh socket and resolves with the answer, read until the server closes. */
function rawRequest(port: number, request: string, localAddress = '127.0.0.1'): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString('latin1')));
    // A reset is the server closing on us (a refused connection); 'close' follows and resolves.
    socket.on('error', (error: NodeJS.ErrnoException) => error.code !== 'ECONNRESET' && reject(error));
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n', 2);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, body });
    });
    socket.write(request);
  });
}

/** Sends headers only (the body never comes) and resolves with the first answer the server writes. */
function headersOnly(port: number, request: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      if (data.includes('\r\n\r\n')) {
        socket.destroy();
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0), text: data });
      }
    });
    socket.on('error', reject);
    socket.write(request);
  });
}

function startHost(env: NodeJS.ProcessEnv, port: number): Promise<ServerProcess> {
  return startServerProcess({
    name: 'host',
    command: TSX,
    args: [MAIN],
    cwd: REPO,
    env: { ...process.env, CONDUIT_HOST_BIND: '127.0.0.1', CONDUIT_HOST_PORT: String(port), ...env },
    port,
    ready: async (url) => (await fetch(`${url}${PREFIX}/capabilities`)).ok,
    timeoutMs: 60_000,
  });
}

describe('a standalone host process', () => {
  let root: string;
  let host: ServerProcess;
  let port: number;

  beforeAll(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'conduit-attacks-'));
    mkdirSync(path.join(root, 'profiles', 'work'), { recursive: true });
    writePairing(root, 'https://relay.example');
    port = await freePort();
    host = await startHost(
      {
        HERMES_HOME: root,
        CONDUIT_STATE_DIR: path.join(root, 'conduit-host'),
        CONDUIT_HOST_TOKEN: TOKEN,
        HERMES_DASHBOARD_URL: '',
        CONDUIT_HEADERS_TIMEOUT_MS: '300',
        CONDUIT_REQUEST_TIMEOUT_MS: '300',
        CONDUIT_CONNECTIONS_PER_IP: '4',
      },
      port,
    );
  });
  afterAll(async () => {
    host?.child.kill('SIGTERM');
    await host?.exited;
    rmSync(root, { recursive: true, force: true });
  });

  it.each([
    ['a percent-escaped underscore', `${PREFIX.replace('conduit_push', 'conduit%5Fpush')}/e2e`],
    ['a percent-escaped letter', `/%61pi/plugins/conduit_push/e2e`],
    ['escapes in every segment', `/%61%70%69/%70lugins/conduit%5f%70ush/e2e`],
  ])('a plugin route spelled with %s still needs the token', async (_name, target) => {
    const answer = await fetch(`${host.url}${target}`);
    expect(answer.status).toBe(401);
    expect(await answer.json()).toEqual({ error: 'unauthorized' });
    const authorised = await fetch(`${host.url}${target}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(authorised.status).toBe(200);
  });

  it('an absolute-form request target still needs the token', async () => {
    const answer = await rawRequest(
      port,
      `GET http://127.0.0.1:${port}${PREFIX}/e2e HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toEqual({ error: 'unauthorized' });
    // Its authority stands in for Host (RFC 9112), so a name the service is not known by is refused first.
    const unknown = await rawRequest(
      port,
      `GET http://x${PREFIX}/e2e HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
    );
    expect(unknown.status).toBe(403);
  });

  it('the chained attack (re-pair to the attacker, answer the card) reaches no handler without the token', async () => {
    const form = JSON.stringify({ pairing_code: 'ATTACK-CODE', relay_url: 'https://attacker.example' });
    const pair = await rawRequest(
      port,
      `POST http://localhost:${port}${PREFIX}/pair HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n` +
        `Content-Length: ${Buffer.byteLength(form)}\r\nConnection: close\r\n\r\n${form}`,
    );
    expect(pair.status).toBe(401);
    const approve = await fetch(`${host.url}/api/plugins/conduit%5Fpush/approvals/respond`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ session_key: 's', choice: 'always' }),
    });
    expect(approve.status).toBe(401);
    // The pairing on disk is the user's, untouched.
    expect(JSON.parse(readFileSync(path.join(root, 'conduit-push.json'), 'utf8'))).toMatchObject({
      relay_url: 'https://relay.example',
    });
  });

  it('a cross-site form body (text/plain, form encodings) is refused even with the token', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const answer = await fetch(`${host.url}${PREFIX}/pair`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': type },
        body: '{"pairing_code":"ABCD-EFGH"}',
      });
      expect(answer.status).toBe(415);
      expect(await answer.json()).toEqual({
        error: 'unsupported_media_type',
        detail: 'Send the request body as application/json',
      });
    }
  });

  it('a page of another origin is refused before any route, and so is a name the service is not known by', async () => {
    const crossSite = await fetch(`${host.url}${PREFIX}/pair`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', origin: 'https://evil.example' },
      body: '{}',
    });
    expect(crossSite.status).toBe(403);
    expect(await crossSite.json()).toMatchObject({ error: 'origin_not_allowed' });
    const nullOrigin = await fetch(`${host.url}${PREFIX}/capabilities`, { headers: { origin: 'null' } });
    expect(nullOrigin.status).toBe(403);
    const rebound = await rawRequest(
      port,
      `GET ${PREFIX}/capabilities HTTP/1.1\r\nHost: rebind.attacker.example:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body)).toMatchObject({ error: 'host_not_allowed' });
    // Its own origin, loopback names and IP literals pass.
    const sameOrigin = await fetch(`${host.url}${PREFIX}/capabilities`, { headers: { origin: host.url } });
    expect(sameOrigin.status).toBe(200);
    const localhost = await rawRequest(
      port,
      `GET ${PREFIX}/capabilities HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(localhost.status).toBe(200);
  });

  it('a request whose headers never finish is answered 408 and closed within the bound', async () => {
    const answer = await rawRequest(port, `GET ${PREFIX}/capabilities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `);
    expect(answer.status).toBe(408);
  });

  it('a request whose body never finishes is closed within the bound', async () => {
    const answer = await rawRequest(
      port,
      `POST ${PREFIX}/pair HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"pairing`,
    );
    // Closed (408 where Node still can answer); never handled, never left open.
    expect([0, 408]).toContain(answer.status);
    expect(answer.body).not.toContain('detail');
  });

  it('one address holds at most the configured number of connections', async () => {
    // From an address of its own on loopback (127.0.0.0/8), so no other test's kept-alive sockets count.
    const peer = '127.0.0.23';
    const sockets = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<net.Socket>((resolve, reject) => {
            const socket = net.connect({ port, host: '127.0.0.1', localAddress: peer }, () => resolve(socket));
            socket.on('error', reject);
          }),
      ),
    );
    try {
      // Held sockets send their request line slowly; they are open connections all the same.
      const extra = await rawRequest(
        port,
        `GET ${PREFIX}/capabilities HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
        peer,
      );
      expect(extra.status).toBe(0); // closed without an answer
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    // Once they are gone the address is served again (wait on the server's side seeing them close).
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (
        await rawRequest(
          port,
          `GET ${PREFIX}/capabilities HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
          peer,
        )
      ).status;
    }
    expect(status).toBe(200);
  });

  it('the hook and MCP endpoints refuse a wrong token before reading an 8 MiB body', async () => {
    const size = 8 * 1024 * 1024;
    const hook = await headersOnly(
      port,
      `POST /_conduit/hook HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Conduit-Hook-Token: wrong\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`,
    );
    expect(hook.status).toBe(401);
    const mcp = await headersOnly(
      port,
      `POST /_conduit/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n` +
        `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${size}\r\n\r\n`,
    );
    expect(mcp.status).toBe(401);
  });
});

/** A Hermes dashboard in its loopback mode: no login, its session token in `/`, a Host guard of its own. */
class GuardedDashboard {
  readonly token = 'dashboard-session-token-never-leaks';
  server = http.createServer((req, res) => {
    // Hermes' own DNS-rebinding guard: only its own address.
    if (req.headers.host !== this.authority) return res.writeHead(400).end('Invalid host header');
    if (req.url === '/') {
      return res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<script>window.__HERMES_SESSION_TOKEN__="${this.token}"</script>`);
    }
    res.writeHead(404).end();
  });
  authority = '';

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.authority = `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
    return `http://${this.authority}`;
  }
}

describe('in front of a Hermes dashboard without a login of its own', () => {
  let root: string;
  let dashboard: GuardedDashboard;
  let dashboardUrl: string;

  beforeAll(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'conduit-rebind-'));
    dashboard = new GuardedDashboard();
    dashboardUrl = await dashboard.start();
  });
  afterAll(async () => {
    dashboard.server.closeAllConnections();
    await new Promise((resolve) => dashboard.server.close(resolve));
    rmSync(root, { recursive: true, force: true });
  });

  it('a DNS-rebinding page cannot read the session token through the proxy', async () => {
    const port = await freePort();
    const host = await startHost(
      { HERMES_HOME: root, CONDUIT_STATE_DIR: path.join(root, 'state-a'), HERMES_DASHBOARD_URL: dashboardUrl },
      port,
    );
    try {
      // The attacker's name now resolves to 127.0.0.1; the browser sends it as Host.
      const rebound = await rawRequest(
        port,
        `GET / HTTP/1.1\r\nHost: rebind.attacker.example:${port}\r\nConnection: close\r\n\r\n`,
      );
      expect(rebound.status).toBe(403);
      expect(rebound.body).not.toContain(dashboard.token);
      // An absolute-form target carries its own authority, which is checked the same way.
      const absolute = await rawRequest(
        port,
        `GET http://rebind.attacker.example:${port}/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
      );
      expect(absolute.status).toBe(403);
      expect(absolute.body).not.toContain(dashboard.token);
      // The user's own browser, on the address the service listens on, still gets the dashboard.
      const own = await fetch(`${host.url}/`);
      expect(own.status).toBe(200);
      expect(await own.text()).toContain(dashboard.token);
    } finally {
      host.child.kill('SIGTERM');
      await host.exited;
    }
  });

  it('listening on a non-loopback address is refused at start unless the operator opts in', async () => {
    const port = await freePort();
    const refused = startHost(
      {
        HERMES_HOME: root,
        CONDUIT_STATE_DIR: path.join(root, 'state-b'),
        HERMES_DASHBOARD_URL: dashboardUrl,
        CONDUIT_HOST_BIND: '0.0.0.0',
      },
      port,
    );
    await expect(refused).rejects.toThrow(/runs without a login of its own[\s\S]*CONDUIT_HOST_ALLOW_OPEN_DASHBOARD=1/);
  });
});
