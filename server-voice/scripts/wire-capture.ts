/**
 * Outbound pacing as it reached the wire, for `bench:voice`: tcpdump captures UDP on the loopback interface
 * with kernel timestamps, so the figure is what the gateway put on the network, free of the delays of the
 * benchmark's own client process (which timestamps packets in JavaScript after its event loop gets to them).
 * Needs tcpdump (Debian: `apt-get install tcpdump`) and the right to capture (root or CAP_NET_RAW); without
 * them `startWireCapture` returns null and the bench prints the client-side figure only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface WireCapture {
  /** Stops the capture and returns the RTP packets it saw (time in ms, SSRC, sequence number). */
  stop(): Promise<RtpSighting[]>;
}

export interface RtpSighting {
  atMs: number;
  /** The UDP source port: which process sent it. */
  sourcePort: number;
  ssrc: number;
  sequence: number;
}

/** The local UDP ports of a process's and its descendants' sockets (Linux /proc), to tell its packets apart. */
export function udpPortsOf(pid: number): Set<number> {
  const inodes = new Set<string>();
  const visit = (id: number) => {
    try {
      for (const fd of readdirSync(`/proc/${id}/fd`)) {
        try {
          const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${id}/fd/${fd}`));
          if (match) inodes.add(match[1]!);
        } catch {
          // closed meanwhile
        }
      }
      for (const child of readFileSync(`/proc/${id}/task/${id}/children`, 'utf8').trim().split(/\s+/).filter(Boolean))
        visit(Number(child));
    } catch {
      // the process ended
    }
  };
  visit(pid);
  const ports = new Set<number>();
  for (const table of ['/proc/net/udp', '/proc/net/udp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length > 9 && inodes.has(fields[9]!)) ports.add(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

export async function startWireCapture(): Promise<WireCapture | null> {
  if (spawnSync('tcpdump', ['--version'], { stdio: 'ignore' }).status !== 0) return null;
  const file = path.join(os.tmpdir(), `bench-voice-${process.pid}-${Date.now()}.pcap`);
  // 96 bytes per packet: link, IPv4 and UDP headers and the 12-byte RTP header; -U writes each packet out.
  const child: ChildProcess = spawn('tcpdump', ['-i', 'lo', '-n', '-U', '-s', '96', '-w', file, 'udp'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // tcpdump reports "listening on lo" once the capture runs.
  const started = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 5000);
    child.stderr?.on('data', () => {
      if (stderr.includes('listening on')) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (!started) {
    child.kill('SIGKILL');
    rmSync(file, { force: true });
    console.error(`wire capture unavailable: ${stderr.trim() || 'tcpdump did not start'}`);
    return null;
  }
  return {
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      await exited;
      try {
        return parsePcap(readFileSync(file));
      } finally {
        rmSync(file, { force: true });
      }
    },
  };
}

/** RTP packets (not RTCP, STUN or DTLS) in a classic pcap file of an Ethernet-framed (Linux loopback) capture. */
export function parsePcap(data: Buffer): RtpSighting[] {
  if (data.length < 24) return [];
  const magic = data.readUInt32LE(0);
  const nanos = magic === 0xa1b23c4d;
  if (magic !== 0xa1b2c3d4 && !nanos) throw new Error('not a little-endian pcap file');
  const linkType = data.readUInt32LE(20);
  if (linkType !== 1) throw new Error(`unexpected pcap link type ${linkType}`);
  const sightings: RtpSighting[] = [];
  for (let offset = 24; offset + 16 <= data.length;) {
    const seconds = data.readUInt32LE(offset);
    const fraction = data.readUInt32LE(offset + 4);
    const captured = data.readUInt32LE(offset + 8);
    const packet = data.subarray(offset + 16, offset + 16 + captured);
    offset += 16 + captured;
    // Ethernet (14) → IPv4 (IHL words) → UDP (8) → RTP.
    if (packet.length < 14 + 20 + 8 + 12 || packet.readUInt16BE(12) !== 0x0800) continue;
    const ipHeader = (packet[14]! & 0x0f) * 4;
    if (packet[14 + 9] !== 17) continue;
    const sourcePort = packet.readUInt16BE(14 + ipHeader);
    const rtp = packet.subarray(14 + ipHeader + 8);
    if (rtp.length < 12 || rtp[0]! >> 6 !== 2) continue;
    // RTCP packet types 192–223 share the second byte's range with a marked RTP payload type; skip them.
    if (rtp[1]! >= 192 && rtp[1]! <= 223) continue;
    sightings.push({
      atMs: seconds * 1000 + (nanos ? fraction / 1e6 : fraction / 1e3),
      sourcePort,
      ssrc: rtp.readUInt32BE(8),
      sequence: rtp.readUInt16BE(2),
    });
  }
  return sightings;
}
