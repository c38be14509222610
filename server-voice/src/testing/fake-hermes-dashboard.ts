/**
 * A local stand-in for the Hermes dashboard's WebSocket `/api/ws` (SURFACES.md §2, JSON-RPC 2.0 as Hermes'
 * TUI speaks it), enough for slash commands: `session.resume` (known Hermes sessions only), `session.create`,
 * `slash.exec`, `command.dispatch` and `session.close`. It records every request, so a test sees what reached
 * Hermes as a command.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

export interface DashboardRequest {
  method: string;
  params: Record<string, unknown>;
}

export interface FakeHermesDashboardOptions {
  /** The session token the socket must carry as `?token=`; any other is refused (401). */
  token: string;
  /** Hermes session ids `session.resume` finds (others answer 4007 "session not found"). */
  knownSessions?: string[];
  /** Hermes' answer to `slash.exec`: output text, or an error message. */
  answer?: (command: string) => { output: string } | { error: string };
}

export interface FakeHermesDashboard {
  /** The dashboard's root URL (`http://127.0.0.1:<port>`). */
  url: string;
  requests: DashboardRequest[];
  /** Socket upgrades refused for a wrong token. */
  refused: number;
  close(): Promise<void>;
}

export async function startFakeHermesDashboard(options: FakeHermesDashboardOptions): Promise<FakeHermesDashboard> {
  const requests: DashboardRequest[] = [];
  const known = new Set(options.knownSessions ?? []);
  const answer = options.answer ?? ((command: string) => ({ output: `Ran ${command}.` }));
  let sessions = 0;
  const state = { refused: 0 };
  const server = http.createServer((_request, response) => response.writeHead(404).end());
  const sockets = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://dashboard');
    if (url.pathname !== '/api/ws' || url.searchParams.get('token') !== options.token) {
      state.refused += 1;
      socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n');
      return;
    }
    sockets.handleUpgrade(request, socket, head, (ws) => {
      ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'event', params: { type: 'gateway.ready', payload: {} } }));
      ws.on('message', (data) => {
        const rpc = JSON.parse(data.toString()) as { id: number; method: string; params?: Record<string, unknown> };
        const params = rpc.params ?? {};
        requests.push({ method: rpc.method, params });
        const reply = (body: { result: unknown } | { error: { code: number; message: string } }) =>
          ws.send(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, ...body }));
        switch (rpc.method) {
          case 'session.resume': {
            const target = String(params.session_id ?? '');
            if (!known.has(target)) return reply({ error: { code: 4007, message: 'session not found' } });
            sessions += 1;
            return reply({ result: { session_id: `tui${sessions}`, resumed: target } });
          }
          case 'session.create':
            sessions += 1;
            return reply({ result: { session_id: `tui${sessions}` } });
          case 'slash.exec':
          case 'command.dispatch': {
            const command =
              rpc.method === 'slash.exec'
                ? String(params.command ?? '')
                : `/${String(params.name)} ${String(params.arg)}`;
            const result = answer(command);
            if ('error' in result) return reply({ error: { code: 4018, message: result.error } });
            // Hermes' TUI output can carry terminal colour codes.
            return reply({ result: { output: `\u001b[1m${result.output}\u001b[0m` } });
          }
          case 'session.close':
            return reply({ result: { closed: true } });
          default:
            return reply({ error: { code: -32601, message: `unknown method ${rpc.method}` } });
        }
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get refused() {
      return state.refused;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of sockets.clients) client.terminate();
        sockets.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
