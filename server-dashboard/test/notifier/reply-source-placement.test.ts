import { readFileSync, statSync, writeFileSync } from 'node:fs';
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

/**
 * A Hermes dashboard whose /api/ws answers every request (so a test knows the proxy forwarded it), as
 * the gateway does: session.resume answers the live handle of the stored chat, session.create a new
 * chat's live handle and stored id. Events stream in between, as they do while a turn runs.
 */
class FakeGateway {
  server = http.createServer((_req, res) => res.writeHead(404).end());
  wss = new WebSocketServer({ noServer: true, perMessageDeflate: { threshold: 0 } });
  url = '';
  private live = 0;
  async start() {
    this.server.on('upgrade', (req, socket, head) =>
      this.wss.handleUpgrade(req, socket, head, (ws) =>
        ws.on('message', (data) => {
          const rpc = JSON.parse(data.toString()) as { id: number; method: string };
          ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'event', params: { type: 'message.delta', payload: 'x' } }));
          const result =
            rpc.method === 'session.resume'
              ? { session_id: `live-${++this.live}` }
              : rpc.method === 'session.create'
                ? { session_id: `live-${++this.live}`, stored_session_id: 'stored-new' }
                : {};
          ws.send(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result }));
        }),
      ),
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

/** An app socket through the host; each call resolves once the dashboard has answered it. */
async function appSocket(url: string, headers: Record<string, string>, compress: boolean, query = '') {
  let id = 0;
  const ws = new WebSocket(url.replace('http', 'ws') + `/api/ws?token=t${query}`, {
    headers,
    perMessageDeflate: compress ? { threshold: 0 } : false,
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const call = (method: string, params: Record<string, unknown>) =>
    new Promise<unknown>((resolve) => {
      const mine = ++id;
      const onMessage = (data: WebSocket.RawData) => {
        const reply = JSON.parse(data.toString()) as { id?: number; result?: unknown };
        if (reply.id !== mine) return;
        ws.off('message', onMessage);
        resolve(reply.result);
      };
      ws.on('message', onMessage);
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: mine, method, params }));
    });
  return {
    call,
    submit: (text: string) => call('prompt.submit', { session_id: 'live1', text }),
    close: () => new Promise((resolve) => ws.once('close', resolve).close()),
  };
}

async function turn(url: string, token: string, session: string, text: string, platform: string, profile = 'default') {
  const base = { session_id: session, profile };
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
    // A socket opened for the work profile (?profile=work): its prompts place that profile's turns only.
    writePairing(path.join(home.root, 'profiles', 'work'), relay.url);
    writeFileSync(
      path.join(home.root, 'profiles', 'work', 'conduit-notifications.json'),
      JSON.stringify({ v: 1, reply_sources: { conduit: false } }),
    );
    const work = await appSocket(host.url, { 'x-conduit-client': 'ios/3.1' }, false, '&profile=work');
    await work.submit('Work question');
    await turn(host.url, host.hookToken, 'chat-default', 'Work question', 'desktop');
    await turn(host.url, host.hookToken, 'chat-work', 'Work question', 'desktop', 'work');
    await work.close();
    for (let i = 0; i < 200 && relay.events.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    expect(relay.events.map((e) => [e.body.type, e.body.session_id])).toEqual([
      ['response.ready', 'chat-other'],
      ['response.ready', 'chat-tg'],
      ['response.ready', 'chat-default'],
    ]);
    await conduit.close();
    await desktop.close();
    await host.app.close();
  });
});

describe('being watched on Desktop: the selection published from Desktop sockets', () => {
  const selectedFile = () => path.join(home.root, 'conduit-desktop-selected.json');
  const selected = () => (JSON.parse(readFileSync(selectedFile(), 'utf8')) as { sessions: string[] }).sessions;

  async function eventually(what: string, probe: () => boolean) {
    for (let i = 0; i < 300; i++) {
      try {
        if (probe()) return;
      } catch {
        // not written yet
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  it('opens and switches move the selection, a closed socket ends it; a quick reply in the open chat is quiet', async () => {
    const host = await startHost(testConfig(home.root, { fronting: { mode: 'dashboard', dashboardUrl: gateway.url } }));
    const mac = await appSocket(host.url, { 'user-agent': 'Mozilla/5.0 (Macintosh) Electron/33.2.0' }, true);
    const phone = await appSocket(host.url, { 'x-conduit-client': 'ios/3.1' }, false);
    await phone.call('session.resume', { session_id: 'phone-chat' }); // Conduit never counts
    const opened = (await mac.call('session.resume', { session_id: 'chat-a' })) as { session_id: string };
    await eventually('chat-a selected', () => selected().join() === 'chat-a');
    await mac.call('session.create', {});
    await eventually('the new chat selected', () => selected().join() === 'stored-new');
    await mac.call('session.activate', { session_id: opened.session_id }); // back to chat-a by its live handle
    await eventually('chat-a selected again', () => selected().join() === 'chat-a');

    await turn(host.url, host.hookToken, 'chat-a', 'quick question', 'desktop');
    await turn(host.url, host.hookToken, 'phone-chat', 'another question', 'desktop');
    for (let i = 0; i < 200 && relay.events.length < 1; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    expect(relay.events.map((e) => e.body.session_id)).toEqual(['phone-chat']);

    await mac.close();
    await eventually('the selection ended', () => selected().length === 0);
    expect(statSync(selectedFile()).mode & 0o777).toBe(0o600);
    await phone.close();
    await host.app.close();
  });
});
