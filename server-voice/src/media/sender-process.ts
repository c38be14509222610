import type { Socket as UdpSocket } from 'node:dgram';
import { SrtcpSession, SrtpSession } from 'werift';
import { OutboundRtpStream } from './call-peer.js';
import { SharedFrameClock } from './frame-clock.js';
import { FramePacer } from './paced-output.js';
import type { AddCall, FromSender, SenderOp, ToSender } from './sender-protocol.js';
import { lowerHelperThreadPriority, requestRealtimeScheduling } from './thread-priority.js';

/**
 * The media sender process (forked by media-sender.ts): it paces every call's outbound Opus on one shared
 * 20 ms clock and sends it, SRTP-protected, on the call's own UDP socket — a copy of the gateway's handle,
 * so packets leave from the address the client's ICE checks validated. The gateway keeps reading that
 * socket (STUN, DTLS, inbound RTP, the data channel); this process never reads it.
 *
 * It holds no audio beyond 500 ms per call and allocates little, so its garbage collections are short, and
 * nothing the gateway does (decoding, detection, agents, its own collections) delays a tick here. Where the
 * system allows it, its thread runs under real-time round-robin scheduling, so a tick is never kept waiting
 * for the gateway's time slice either (`requestRealtimeScheduling`).
 */

const PACING_REPORT_MS = 5000;
/** Ticks between two RTCP sender reports of a call (one second). */
const REPORT_EVERY_TICKS = 50;

interface SenderCall {
  socket: UdpSocket;
  pacer: FramePacer<Buffer>;
  epoch: number;
  /** Speech frames sent since the last report. */
  unreported: number;
  ticks: number;
}

const send = (message: FromSender) => process.send?.(message);
const clock = new SharedFrameClock(() => performance.now(), { precise: true });
const calls = new Map<string, SenderCall>();
/** When the first speech frame of the pending report went out (epoch ms), or null when none is pending. */
let reportAt: number | null = null;

/** Reports speech sent once the current turn of the loop is done (all calls of a tick in one message). */
function noteSent(call: SenderCall): void {
  call.unreported += 1;
  if (reportAt !== null) return;
  reportAt = performance.timeOrigin + performance.now();
  queueMicrotask(flushReports);
}

function flushReports(): void {
  if (reportAt === null) return;
  const entries: [string, number, number][] = [];
  for (const [id, call] of calls) {
    if (call.unreported === 0) continue;
    entries.push([id, call.epoch, call.unreported]);
    call.unreported = 0;
  }
  const at = reportAt;
  reportAt = null;
  if (entries.length > 0) send({ t: 'sent', at, entries });
}

/** Stops this process from reading its copy of the socket: every inbound datagram stays the gateway's. */
function stopReading(socket: UdpSocket): void {
  const key = Object.getOwnPropertySymbols(socket).find((symbol) => symbol.description === 'state symbol');
  const state = key ? (socket as unknown as Record<symbol, unknown>)[key] : undefined;
  const handle = (state as { handle?: { recvStop?: () => number } } | undefined)?.handle;
  if (typeof handle?.recvStop !== 'function') throw new Error('cannot stop reading the socket in this Node.js');
  handle.recvStop();
  (state as { receiving?: boolean }).receiving = false;
  socket.on('message', () => undefined);
}

function addCall(message: AddCall, socket: UdpSocket): void {
  stopReading(socket);
  const { route } = message;
  const srtp = new SrtpSession(route.srtp);
  const srtcp = new SrtcpSession(route.srtp);
  const stream = new OutboundRtpStream(route.ssrc, route.payloadType);
  const call: SenderCall = {
    socket,
    epoch: 0,
    unreported: 0,
    ticks: 0,
    pacer: new FramePacer<Buffer>(
      clock,
      (packet, info) => {
        socket.send(srtp.encrypt(packet, stream.next(packet.length)), route.remotePort, route.remoteAddress);
        if (!info.silent) noteSent(call);
        call.ticks += 1;
        if (call.ticks % REPORT_EVERY_TICKS === 0) {
          const report = stream.senderReport();
          if (report) socket.send(srtcp.encrypt(report.serialize()), route.remotePort, route.remoteAddress);
        }
      },
      Buffer.from(message.silence),
    ),
  };
  socket.on('error', () => undefined);
  calls.set(message.id, call);
  call.pacer.start();
}

function removeCall(id: string): void {
  const call = calls.get(id);
  if (!call) return;
  calls.delete(id);
  call.pacer.stop();
  try {
    call.socket.close();
  } catch {
    // Already closed.
  }
}

function apply(op: SenderOp): void {
  const call = calls.get(op[1]);
  if (op[0] === 'remove') return removeCall(op[1]);
  if (!call) return;
  if (op[0] === 'clear') {
    call.pacer.clear();
    call.epoch = op[2];
    call.unreported = 0;
  } else {
    // The gateway keeps at most 500 ms unconfirmed per call, so this never waits.
    void call.pacer.write(Buffer.from(op[2].buffer, op[2].byteOffset, op[2].byteLength), call.pacer.epoch);
  }
}

process.on('message', (raw: ToSender, handle: unknown) => {
  if (raw.t === 'add') {
    try {
      if (!handle) throw new Error('no socket came with the call');
      addCall(raw, handle as UdpSocket);
    } catch (error) {
      send({ t: 'failed', id: raw.id, message: error instanceof Error ? error.message : String(error) });
    }
    return;
  }
  for (const op of raw.ops) apply(op);
});

// The gateway went away (or closed this process): nothing is left to send for. A Ctrl-C in a terminal, or a
// stop signal sent to the whole process group, is the gateway's to handle: it closes its calls, then this
// process, which would otherwise die first and take every call's audio with it.
process.on('disconnect', () => process.exit(0));
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);

setInterval(() => {
  const stats = clock.takePacingStats();
  if (stats && calls.size > 0) send({ t: 'pacing', calls: calls.size, stats });
}, PACING_REPORT_MS).unref();

// The gateway passes `--lower-helper-threads` when its own setting says so (src/media/thread-priority.ts).
if (process.argv.includes('--lower-helper-threads')) lowerHelperThreadPriority();
const priorityArg = process.argv.find((arg) => arg.startsWith('--rt-priority='));
send({ t: 'ready', pid: process.pid, scheduling: requestRealtimeScheduling(Number(priorityArg?.split('=')[1] ?? 0)) });
