import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WatchConfig } from '../../src/watch/index.js';
import { startWatchRelay, watchKey, type WatchTestRelay } from './harness.js';
import { audioMessage, open, RawClient, refused } from './ws-clients.js';

let relay: WatchTestRelay;
/** Compares large messages by SHA-256 and length (vitest's deep equality is slow on big buffers). */
const digest = (b: Buffer): string => `${b.length}:${createHash('sha256').update(b).digest('hex')}`;
afterEach(() => relay.close());

async function setup(config: Partial<WatchConfig> = {}, audio = true) {
  relay = await startWatchRelay(config);
  const gateway = relay.gateway();
  const key = watchKey();
  const { data } = await relay.client.POST('/v1/watch-tools/grants', {
    headers: { authorization: gateway.authorization },
    body: { watch_key_sha256: key.sha256, ttl_s: 600, max_calls: 10, audio },
  });
  const gid = data!.grant_id;
  const ws = relay.baseUrl.replace('http', 'ws');
  return {
    gid,
    gateway,
    key,
    hostUrl: `${ws}/v1/watch-audio/${gid}/host`,
    watchUrl: `${ws}/v1/watch-audio/${gid}/watch`,
    port: (relay.app.server.address() as AddressInfo).port,
  };
}

async function grantFor(gateway: { authorization: string }, audio = true) {
  const key = watchKey();
  const { data } = await relay.client.POST('/v1/watch-tools/grants', {
    headers: { authorization: gateway.authorization },
    body: { watch_key_sha256: key.sha256, ttl_s: 600, max_calls: 10, audio },
  });
  return { gid: data!.grant_id, key };
}

describe('audio upgrade checks before the 101', () => {
  it('an upgrade to any other path gets "HTTP/1.1 404 Not Found" and the connection closes', async () => {
    const { port } = await setup();
    for (const path of ['/v1/other', '/v1/watch-audio/short/host', '/v1/watch-audio/AAAAAAAAAAAAAAAAAAAAAA/phone']) {
      const client = await RawClient.connect(port, path, {});
      expect(client.status.split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found');
      await new Promise<void>((resolve) =>
        client.socket.closed ? resolve() : client.socket.once('close', () => resolve()),
      );
    }
  });

  it('400 bad_upgrade for a wrong version or key; a plain GET is 404', async () => {
    const { port, gid, gateway } = await setup();
    const path = `/v1/watch-audio/${gid}/host`;
    for (const headers of [{ 'Sec-WebSocket-Version': '12' }, { 'Sec-WebSocket-Key': 'short==' }]) {
      const socket = connect(port, '127.0.0.1');
      const lines = [
        `GET ${path} HTTP/1.1`,
        'Host: x',
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Authorization: ${gateway.authorization}`,
        `Sec-WebSocket-Version: ${headers['Sec-WebSocket-Version'] ?? '13'}`,
        `Sec-WebSocket-Key: ${headers['Sec-WebSocket-Key'] ?? 'dGhlIHNhbXBsZSBub25jZQ=='}`,
      ];
      socket.end(`${lines.join('\r\n')}\r\n\r\n`);
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString()));
      await new Promise<void>((resolve) => socket.once('close', () => resolve()));
      expect(text.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
      expect(text.endsWith('{"error":"bad_upgrade"}')).toBe(true);
    }
    const plain = await fetch(`${relay.baseUrl}${path}`);
    expect(plain.status).toBe(404);
  });

  it('host: 401 unknown gateway, 410 foreign or closed grant, 403 without audio, 503 over capacity', async () => {
    const { hostUrl, gid, gateway } = await setup({ maxAudioBridgesPerGateway: 1 });
    expect(await refused(hostUrl, 'Bearer x.y.z')).toEqual({ status: 401, body: { error: 'unauthorized' } });
    expect(await refused(hostUrl, relay.gateway().authorization)).toMatchObject({
      status: 410,
      body: { error: 'grant_closed' },
    });
    const silent = await grantFor(gateway, false);
    expect(await refused(hostUrl.replace(gid, silent.gid), gateway.authorization)).toEqual({
      status: 403,
      body: { error: 'audio_not_granted' },
    });
    const host = await open(hostUrl, gateway.authorization);
    const second = await grantFor(gateway);
    expect(await refused(hostUrl.replace(gid, second.gid), gateway.authorization)).toEqual({
      status: 503,
      body: { error: 'watch_audio_capacity' },
    });
    host.ws.close();
    await host.closed;
    await relay.client.DELETE('/v1/watch-tools/grants/{gid}', {
      params: { path: { gid: second.gid } },
      headers: { authorization: gateway.authorization },
    });
    expect(await refused(hostUrl.replace(gid, second.gid), gateway.authorization)).toEqual({
      status: 410,
      body: { error: 'grant_closed', reason: 'host' },
    });
  });

  it('relay-wide cap: 503 once RELAY_MAX_WATCH_AUDIO_BRIDGES hosts are attached', async () => {
    const { hostUrl, gateway } = await setup({ maxAudioBridges: 1 });
    const host = await open(hostUrl, gateway.authorization);
    const other = relay.gateway();
    const { gid } = await grantFor(other);
    expect(
      await refused(`${relay.baseUrl.replace('http', 'ws')}/v1/watch-audio/${gid}/host`, other.authorization),
    ).toEqual({
      status: 503,
      body: { error: 'watch_audio_capacity' },
    });
    // A host replacing its own socket is not a new bridge.
    const again = await open(hostUrl, gateway.authorization);
    expect((await host.closed).code).toBe(4000);
    again.ws.close();
  });

  it('watch: 401 for a wrong key, 403 without audio, 429 after 30 attempts per grant', async () => {
    const { watchUrl, gid, gateway } = await setup();
    expect(await refused(watchUrl, watchKey().authorization)).toEqual({ status: 401, body: { error: 'unauthorized' } });
    expect(await refused(watchUrl)).toEqual({ status: 401, body: { error: 'unauthorized' } });
    const silent = await grantFor(gateway, false);
    expect(await refused(watchUrl.replace(gid, silent.gid), silent.key.authorization)).toEqual({
      status: 403,
      body: { error: 'audio_not_granted' },
    });
    for (let i = 0; i < 29; i += 1) await refused(watchUrl.replace(gid, silent.gid), silent.key.authorization);
    expect(await refused(watchUrl.replace(gid, silent.gid), silent.key.authorization)).toEqual({
      status: 429,
      body: { error: 'rate_limited' },
    });
  });

  it('host: 429 rate_limited after 30 upgrades per grant in a minute', async () => {
    const { hostUrl } = await setup();
    const stranger = relay.gateway();
    for (let i = 0; i < 30; i += 1) expect((await refused(hostUrl, stranger.authorization)).status).toBe(410);
    expect(await refused(hostUrl, stranger.authorization)).toEqual({ status: 429, body: { error: 'rate_limited' } });
  });
});

describe('the bridge', () => {
  it('a Watch without a host is closed 4503 right after the 101', async () => {
    const { watchUrl, key } = await setup();
    const watch = await open(watchUrl, key.authorization);
    expect(await watch.closed).toEqual({ code: 4503, reason: 'host_offline' });
  });

  it('notifies the host, and carries random binary messages untouched both ways', async () => {
    const { hostUrl, watchUrl, key, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await open(watchUrl, key.authorization);
    await vi.waitFor(() => expect(host.messages).toHaveLength(1));
    expect(host.messages[0]).toEqual(Buffer.from([0, 1]));
    const up = [1, 2, 640, 4_096, 65_536].map(audioMessage);
    const down = [3, 960, 20_000, 65_536, 7].map(audioMessage);
    for (const m of up) watch.ws.send(m);
    for (const m of down) host.ws.send(m);
    await vi.waitFor(() => expect(host.messages).toHaveLength(1 + up.length));
    await vi.waitFor(() => expect(watch.messages).toHaveLength(down.length));
    expect(host.messages.slice(1).map(digest)).toEqual(up.map(digest));
    expect(watch.messages.map(digest)).toEqual(down.map(digest));
    watch.ws.close(1000);
    // The client's own close is echoed with an empty reason, as the reference does.
    expect(await watch.closed).toEqual({ code: 1000, reason: '' });
    await vi.waitFor(() => expect(host.messages).toHaveLength(2 + up.length));
    expect(host.messages.at(-1)).toEqual(Buffer.from([0, 2]));
    host.ws.close();
  });

  it('answers a ping with a pong carrying the same payload', async () => {
    const { port, gid, gateway } = await setup();
    const client = await RawClient.connect(port, `/v1/watch-audio/${gid}/host`, {
      Authorization: gateway.authorization,
    });
    expect(client.status.split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols');
    client.frame(0x9, Buffer.from('hello'));
    await vi.waitFor(() => expect(client.firstFrame()).toEqual({ opcode: 0xa, payload: Buffer.from('hello') }));
    client.socket.destroy();
  });

  // Each close carries the reference's reason text beside the code (watch-audio.mjs).
  it.each([
    ['a text message', 1003, 'unsupported', (c: RawClient) => c.frame(0x1, Buffer.from('hi'))],
    ['a fragmented message', 1003, 'fragmented', (c: RawClient) => c.frame(0x2, Buffer.from([1, 2]), { fin: false })],
    ['a continuation frame', 1003, 'unsupported', (c: RawClient) => c.frame(0x0, Buffer.from([1, 2]))],
    ['an unmasked frame', 1002, 'unmasked', (c: RawClient) => c.frame(0x2, Buffer.from([1, 2]), { masked: false })],
    ['an RSV bit', 1002, 'rsv', (c: RawClient) => c.frame(0x2, Buffer.from([1, 2]), { rsv: 4 })],
    ['an unknown opcode', 1002, 'unsupported', (c: RawClient) => c.frame(0x3, Buffer.from([1]))],
    ['a ping over 125 bytes', 1002, 'control_too_big', (c: RawClient) => c.frame(0x9, Buffer.alloc(126, 1))],
    ['a message starting with 0x00', 1002, 'reserved_type', (c: RawClient) => c.frame(0x2, Buffer.from([0, 1, 2]))],
    ['an empty message', 1002, 'reserved_type', (c: RawClient) => c.frame(0x2, Buffer.alloc(0))],
    ['a message over 64 KB', 1009, 'too_big', (c: RawClient) => c.frame(0x2, Buffer.alloc(65_537, 1))],
  ])('closes a Watch sending %s with %i %s', async (_name, code, reason, send) => {
    const { port, gid, key, hostUrl, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const client = await RawClient.connect(port, `/v1/watch-audio/${gid}/watch`, { Authorization: key.authorization });
    expect(client.status.split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols');
    send(client);
    expect(await client.closeFrame()).toEqual({ code, reason });
    // The host hears the Watch is gone, and nothing of the bad message.
    await vi.waitFor(() => expect(host.messages).toEqual([Buffer.from([0, 1]), Buffer.from([0, 2])]));
    host.ws.close();
  });

  it('closes a host that sends text with 1003 and tells the Watch 4503', async () => {
    const { hostUrl, watchUrl, key, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await open(watchUrl, key.authorization);
    host.ws.send('text');
    expect(await host.closed).toEqual({ code: 1003, reason: 'unsupported' });
    expect(await watch.closed).toEqual({ code: 4503, reason: 'host_offline' });
  });

  it('closes a socket over 96 KB/s averaged over 5 s with 4429', async () => {
    const { hostUrl, watchUrl, key, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await open(watchUrl, key.authorization);
    // 7 × 64 KB = 448 KB within one second of the relay's clock: under 480 KB, all forwarded.
    for (let i = 0; i < 7; i += 1) watch.ws.send(audioMessage(65_536));
    await vi.waitFor(() => expect(host.messages).toHaveLength(8));
    // Five seconds later the window still holds them; 64 KB more crosses 480 KB.
    relay.clock.now += 4_000;
    watch.ws.send(audioMessage(65_536));
    expect(await watch.closed).toEqual({ code: 4429, reason: 'too_fast' });
    // Nothing of the message over the limit reached the host; it hears the Watch is gone.
    await vi.waitFor(() => expect(host.messages).toHaveLength(9));
    expect(host.messages.at(-1)).toEqual(Buffer.from([0, 2]));
    host.ws.close();
  });

  it('the rate window slides: the same volume spread over time passes', async () => {
    const { hostUrl, watchUrl, key, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await open(watchUrl, key.authorization);
    for (let i = 0; i < 20; i += 1) {
      watch.ws.send(audioMessage(65_536));
      await vi.waitFor(() => expect(host.messages).toHaveLength(2 + i));
      relay.clock.now += 1_000;
    }
    expect(watch.ws.readyState).toBe(watch.ws.OPEN);
    watch.ws.close();
    host.ws.close();
  });

  it('closes a socket idle for WATCH_AUDIO_IDLE_MS with 4408', async () => {
    const { hostUrl, gateway } = await setup({ audioIdleMs: 150 });
    const host = await open(hostUrl, gateway.authorization);
    expect(await host.closed).toEqual({ code: 4408, reason: 'idle' });
  });

  it('a new Watch replaces the old: the host hears Watch gone [0,2], then Watch connected [0,1]; the old one gets 4000 replaced', async () => {
    const { hostUrl, watchUrl, key, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await open(watchUrl, key.authorization);
    await vi.waitFor(() => expect(host.messages).toEqual([Buffer.from([0, 1])]));
    const watch2 = await open(watchUrl, key.authorization);
    expect(await watch.closed).toEqual({ code: 4000, reason: 'replaced' });
    await vi.waitFor(() => expect(host.messages).toHaveLength(3));
    expect(host.messages).toEqual([Buffer.from([0, 1]), Buffer.from([0, 2]), Buffer.from([0, 1])]);
    // The newcomer is the bridge's Watch: the host's audio reaches it.
    host.ws.send(Buffer.from([7, 7]));
    await vi.waitFor(() => expect(watch2.messages).toEqual([Buffer.from([7, 7])]));
    watch2.ws.close();
    host.ws.close();
  });

  it('a new host replaces the old (4000 replaced) and the Watch is told 4503 host_reconnected', async () => {
    const { hostUrl, watchUrl, key, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await open(watchUrl, key.authorization);
    await vi.waitFor(() => expect(host.messages).toEqual([Buffer.from([0, 1])]));
    const host2 = await open(hostUrl, gateway.authorization);
    expect(await host.closed).toEqual({ code: 4000, reason: 'replaced' });
    expect(await watch.closed).toEqual({ code: 4503, reason: 'host_reconnected' });
    // The old Watch's leaving is not announced to the new host (it never had that Watch): the first
    // thing it hears is the next Watch arriving.
    const watch2 = await open(watchUrl, key.authorization);
    await vi.waitFor(() => expect(host2.messages).toHaveLength(1));
    expect(host2.messages).toEqual([Buffer.from([0, 1])]);
    watch2.ws.close();
    host2.ws.close();
  });

  it('a host that goes away closes the Watch with 4503', async () => {
    const { hostUrl, watchUrl, key, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await open(watchUrl, key.authorization);
    host.ws.terminate();
    expect(await watch.closed).toEqual({ code: 4503, reason: 'host_offline' });
  });

  it('closing the grant closes both ends with 4010', async () => {
    const { hostUrl, watchUrl, key, gateway, gid } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await open(watchUrl, key.authorization);
    await relay.client.DELETE('/v1/watch-tools/grants/{gid}', {
      params: { path: { gid } },
      headers: { authorization: key.authorization },
    });
    expect(await host.closed).toEqual({ code: 4010, reason: 'grant_closed' });
    expect(await watch.closed).toEqual({ code: 4010, reason: 'grant_closed' });
  });

  it('relay shutdown closes both ends with 1001', async () => {
    const { hostUrl, watchUrl, key, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await open(watchUrl, key.authorization);
    await relay.app.close();
    expect(await host.closed).toEqual({ code: 1001, reason: 'going_away' });
    expect(await watch.closed).toEqual({ code: 1001, reason: 'going_away' });
    relay = { ...relay, close: () => Promise.resolve() };
  });

  it('a Watch that stops reading pauses the host instead of the relay buffering', async () => {
    const { port, gid, key, hostUrl, gateway } = await setup();
    const host = await open(hostUrl, gateway.authorization);
    const watch = await RawClient.connect(port, `/v1/watch-audio/${gid}/watch`, { Authorization: key.authorization });
    watch.socket.pause();
    const count = 200;
    const messages = Array.from({ length: count }, (_v, i) => {
      const m = audioMessage(60_000);
      m.writeUInt32BE(i, 1);
      return m;
    });
    // Each read of the relay's clock moves it a second on, so the rate limit is not what stops the host.
    let nowMs = relay.clock.now;
    Object.defineProperty(relay.clock, 'now', { get: () => (nowMs += 1_000), set: (v: number) => (nowMs = v) });
    for (const m of messages) host.ws.send(m);
    // 12 MB sent; with the Watch not reading, what the kernel buffers cannot hold (a few MB) must
    // still sit in the host's own buffer.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(host.ws.bufferedAmount).toBeGreaterThan(2_000_000);
    const stalled = host.ws.bufferedAmount;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Stalled: at most kernel-buffer growth moves on, not the megabytes a buffering relay would take.
    expect(stalled - host.ws.bufferedAmount).toBeLessThan(1_000_000);
    // Once the Watch reads again everything arrives, in order and intact.
    watch.socket.resume();
    await vi.waitFor(
      () => expect(watch.received.reduce((n, c) => n + c.length, 0)).toBeGreaterThanOrEqual(count * 60_004),
      {
        timeout: 20_000,
      },
    );
    const all = Buffer.concat(watch.received);
    let offset = 0;
    for (let i = 0; i < count; i += 1) {
      expect(all[offset]).toBe(0x82);
      expect(all[offset + 1]).toBe(126);
      const length = all.readUInt16BE(offset + 2);
      // Buffer.equals: vitest's deep equality walks 60 KB buffers byte by byte, far too slowly.
      expect(all.subarray(offset + 4, offset + 4 + length).equals(messages[i]!)).toBe(true);
      offset += 4 + length;
    }
    host.ws.close();
    watch.socket.destroy();
  });
});
