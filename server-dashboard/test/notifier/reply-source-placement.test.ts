import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';

/** A Hermes dashboard whose /api/ws answers every message (so a test knows the proxy forwarded it). */
class FakeGateway {
  server = http.createServer((_req, res) => res.writeHead(404).end());
  wss = new WebSocketServer({ noServer: true, perMessageDeflate: true });
  url = '';
  async start() {
    this.server.on('upgrade', (req, socket, head) =>
      this.wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', () => ws.send('{"result":{}}'))),
    );
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async stop() {
    this.wss.close();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

let home: ReturnType<typeof tempHermesHome>;
let gateway: FakeGateway;
let relay: FakeRelay;

beforeEach(async () => {
  home = tempHermesHome();
  gateway = new FakeGateway();
  await gateway.start();
  relay = new FakeRelay();
  await relay.start();
  writePairing(home.root, relay.url);
});
afterEach(async () => {
  await relay.stop();
  await gateway.stop();
  home.cleanup();
});

/** An app socket through the host; `submit` resolves once the dashboard has the prompt. */
async function appSocket(url: string, headers: Record<string, string>, compress: boolean) {
  const ws = new WebSocket(url.replace('http', 'ws') + '/api/ws?token=t', {
    headers,
    perMessageDeflate: compress ? { threshold: 0 } : false,
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  return {
    submit: (text: string) =>
      new Promise<void>((resolve) => {
        ws.once('message', () => resolve());
        ws.send(
          JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'prompt.submit', params: { session_id: 'live1', text } }),
        );
      }),
    close: () => ws.close(),
  };
}

async function turn(url: string, token: string, session: string, text: string, platform: string) {
  const base = { session_id: session, profile: 'default' };
  const extra = { turn_id: `t-${session}`, platform, user_message: text };
  await callHook(url, token, { hook_event_name: 'pre_llm_call', ...base, extra });
  await callHook(url, token, {
    hook_event_name: 'post_llm_call',
    ...base,
    extra: { ...extra, assistant_response: 'ok' },
  });
  await callHook(url, token, { hook_event_name: 'on_session_end', ...base, extra: { ...extra, completed: true } });
}

describe('reply sources: turns placed by the app socket that sent them', () => {
  it('Conduit and Desktop turns follow their switches; unmatched and messaging turns push as before', async () => {
    writeFileSync(
      path.join(home.root, 'conduit-notifications.json'),
      JSON.stringify({ v: 1, reply_sources: { conduit: false, desktop: false } }),
    );
    const host = await startHost(testConfig(home.root, { fronting: { mode: 'dashboard', dashboardUrl: gateway.url } }));
    const conduit = await appSocket(host.url, { 'x-conduit-client': 'ios/3.1' }, false);
    const desktop = await appSocket(host.url, { 'user-agent': 'Mozilla/5.0 (Macintosh) Electron/33.2.0' }, true);
    await conduit.submit('From the phone');
    await desktop.submit('From the Mac');
    await desktop.submit('Also typed on Telegram');
    await turn(host.url, host.hookToken, 'chat-phone', 'From the phone', 'desktop');
    await turn(host.url, host.hookToken, 'chat-mac', 'From the Mac', 'desktop');
    await turn(host.url, host.hookToken, 'chat-other', 'Typed where the host cannot see', 'desktop');
    await turn(host.url, host.hookToken, 'chat-tg', 'Also typed on Telegram', 'telegram');
    for (let i = 0; i < 200 && relay.events.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    expect(relay.events.map((e) => [e.body.type, e.body.session_id])).toEqual([
      ['response.ready', 'chat-other'],
      ['response.ready', 'chat-tg'],
    ]);
    conduit.close();
    desktop.close();
    await host.app.close();
  });
});
