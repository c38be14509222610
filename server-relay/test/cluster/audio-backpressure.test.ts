/**
 * Backpressure of a Watch audio bridge across replicas (issue 22): the bridge lives on the grant's
 * owner (replica 1), the host's socket on replica 2 and the Watch's on replica 3. A reader that stops
 * reading must pause the writer's socket over TCP, through the reader's replica reporting its full
 * socket buffer to the owner and the owner pausing the writer's replica, instead of any replica taking
 * the megabytes into memory; once the reader reads again, every message arrives in order, intact.
 *
 * The per-socket rate limit (96 KB/s over 5 s) would close a writer this fast long before its buffers
 * fill, and real replica processes keep real time, so these replicas raise it
 * (RELAY_WATCH_AUDIO_BYTES_PER_S).
 */
import { describe, expect, it, vi } from 'vitest';
import type WebSocket from 'ws';
import { ROOMY_BUDGETS } from '../conformance/relay.js';
import { audioMessage, open, RawClient } from '../watch/ws-clients.js';
import type { Replica } from './cluster.js';
import { clusterForFile, messagesOf, openGrant, pairedPhone, wsUrl } from './fixtures.js';

const { one, two, three } = clusterForFile({
  replicas: 3,
  env: { ...ROOMY_BUDGETS, RELAY_WATCH_AUDIO_BYTES_PER_S: '1000000000' },
});

/**
 * 400 messages of 60,000 bytes (24 MB), each numbered after its first byte: twice the single-process
 * test's 12 MB, because the kernel's loopback buffers of the two sockets (writer to its replica, the
 * reader's replica to the reader) take about 8 MB here before anything reaches a replica's memory.
 */
const COUNT = 400;
const SIZE = 60_000;
/**
 * What the writer must still hold when it stalls: all but the kernel buffers and the replicas' windows
 * (256 KB a hop), with room to spare. A replica that queued audio instead of pausing the writer takes
 * everything the writer sends.
 */
const HELD_AT_LEAST = 8_000_000;
/** The writer counts as stalled once its buffer has not moved for this long. */
const STILL_MS = 300;

function numberedMessages(): Buffer[] {
  return Array.from({ length: COUNT }, (_v, i) => {
    const message = audioMessage(SIZE);
    message.writeUInt32BE(i, 1);
    return message;
  });
}

/** Resolves with the writer's buffered bytes once they have held still for STILL_MS; fails if they never do. */
async function stalled(writer: WebSocket): Promise<number> {
  const deadline = Date.now() + 20_000;
  let last = writer.bufferedAmount;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, STILL_MS));
    const now = writer.bufferedAmount;
    if (now === last) return now;
    if (Date.now() > deadline) throw new Error(`the writer never stalled (${last} → ${now} bytes buffered)`);
    last = now;
  }
}

/** The payloads of the server's (unmasked) binary frames in `bytes`. */
function framePayloads(bytes: Buffer): Buffer[] {
  const payloads: Buffer[] = [];
  let offset = 0;
  while (offset + 2 <= bytes.length) {
    expect(bytes[offset]).toBe(0x82);
    let length = bytes[offset + 1]! & 0x7f;
    let start = offset + 2;
    if (length === 126) {
      length = bytes.readUInt16BE(offset + 2);
      start = offset + 4;
    }
    payloads.push(bytes.subarray(start, start + length));
    offset = start + length;
  }
  return payloads;
}

const receivedBytes = (reader: RawClient): number => reader.received.reduce((n, chunk) => n + chunk.length, 0);

/**
 * Sends the 24 MB from `writer` while `reader` is paused, checks the writer stalled holding megabytes,
 * then resumes the reader and checks that it got `before` (the frames it had already been sent) and
 * every message, in order and byte-exact.
 */
async function stallsThenDelivers(writer: WebSocket, reader: RawClient, before: Buffer[]): Promise<void> {
  reader.socket.pause();
  const messages = numberedMessages();
  for (const message of messages) writer.send(message);
  const held = await stalled(writer);
  expect(held).toBeGreaterThan(HELD_AT_LEAST);

  reader.socket.resume();
  const total = before.reduce((n, payload) => n + 2 + payload.length, 0) + COUNT * (4 + SIZE);
  await vi.waitFor(() => expect(receivedBytes(reader)).toBeGreaterThanOrEqual(total), { timeout: 30_000 });
  const payloads = framePayloads(Buffer.concat(reader.received));
  expect(payloads.length).toBe(before.length + COUNT);
  expect(payloads.slice(0, before.length)).toEqual(before);
  // Buffer.equals: vitest's deep equality walks 60 KB buffers byte by byte, far too slowly.
  const wrong = payloads.slice(before.length).findIndex((payload, i) => !payload.equals(messages[i]!));
  expect(wrong).toBe(-1);
  expect(writer.bufferedAmount).toBe(0);
}

const portOf = (replica: Replica): number => Number(new URL(replica.url).port);

describe('a slow reader pauses the writer across replicas (bridge on replica 1)', () => {
  it('a Watch on replica 3 that stops reading pauses the host on replica 2; nothing is lost', async () => {
    const phone = await pairedPhone(one);
    const grant = await openGrant(one, phone.gateway, true);
    const host = await open(wsUrl(two, grant.gid, 'host'), phone.gateway);
    const watch = await RawClient.connect(portOf(three), `/v1/watch-audio/${grant.gid}/watch`, {
      Authorization: grant.watch,
    });
    expect(watch.status.split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols');
    // Watch connected: the owner has joined both ends.
    expect(await messagesOf(host, 1)).toEqual([Buffer.from([0, 1])]);

    await stallsThenDelivers(host.ws, watch, []);
    host.ws.close(1000);
    watch.socket.destroy();
  });

  it('a host on replica 2 that stops reading pauses the Watch on replica 3; nothing is lost', async () => {
    const phone = await pairedPhone(one);
    const grant = await openGrant(one, phone.gateway, true);
    const host = await RawClient.connect(portOf(two), `/v1/watch-audio/${grant.gid}/host`, {
      Authorization: phone.gateway,
    });
    expect(host.status.split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols');
    const watch = await open(wsUrl(three, grant.gid, 'watch'), grant.watch);
    // Watch connected: the owner has joined both ends.
    await vi.waitFor(() => expect(receivedBytes(host)).toBeGreaterThanOrEqual(4));

    await stallsThenDelivers(watch.ws, host, [Buffer.from([0, 1])]);
    watch.ws.close(1000);
    host.socket.destroy();
  });
});
