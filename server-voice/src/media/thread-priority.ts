import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

/** The weakest scheduling weight Linux gives a thread (nice 19: about 1/70 of a nice-0 thread's share). */
export const HELPER_THREAD_NICE = 19;
/** How often new helper threads are looked for (libuv starts its pool on first use, V8 may add workers). */
const RESCAN_MS = 10_000;

export interface HelperThreadPriority {
  /** The thread ids lowered so far. */
  readonly lowered: ReadonlySet<number>;
  /** Looks for new helper threads now (also done every 10 s). */
  rescan(): void;
  stop(): void;
}

/**
 * Gives the event loop — which paces every call's outbound audio on a shared 20 ms tick — precedence over
 * the process's helper threads: V8's garbage-collection workers (concurrent marking, parallel scavenging),
 * libuv's thread pool (DNS lookups, file reads) and onnxruntime's. They are lowered to nice 19. On one core
 * (the benchmark, a one-CPU container) a pacing timer that fires while a helper runs otherwise waits for
 * that helper's time slice with the loop idle: that, not the loop's own work, caused most late frames.
 * Helpers still get every moment the loop leaves idle, so garbage collection and inference keep up.
 *
 * Linux only (thread ids under /proc/self/task; `setpriority` on a thread id affects that thread alone).
 * Elsewhere, or where the kernel refuses, it does nothing. Lowering one's own threads needs no privilege.
 */
export function lowerHelperThreadPriority(
  options: { nice?: number; rescanMs?: number; mainThreadId?: number } = {},
): HelperThreadPriority {
  const nice = options.nice ?? HELPER_THREAD_NICE;
  const main = options.mainThreadId ?? process.pid; // Linux: the main thread's id is the process id.
  const lowered = new Set<number>();
  const rescan = () => {
    let threads: string[];
    try {
      threads = readdirSync('/proc/self/task');
    } catch {
      return; // not Linux
    }
    const alive = new Set(threads.map(Number));
    for (const tid of lowered) if (!alive.has(tid)) lowered.delete(tid);
    for (const tid of alive) {
      if (tid === main || lowered.has(tid)) continue;
      try {
        os.setPriority(tid, nice);
        lowered.add(tid);
      } catch {
        // The thread ended meanwhile, or the kernel refused: leave it as it is.
      }
    }
  };
  rescan();
  const timer = setInterval(rescan, options.rescanMs ?? RESCAN_MS);
  timer.unref();
  return { lowered, rescan, stop: () => clearInterval(timer) };
}

/** A thread's scheduling as Linux reports it. */
export interface ThreadScheduling {
  /** `realtime-rr`, `realtime-fifo` or `normal` (SCHED_OTHER, BATCH, IDLE). */
  policy: 'realtime-rr' | 'realtime-fifo' | 'normal';
  /** The real-time priority (1–99), 0 under normal scheduling. */
  priority: number;
  /** Why real-time scheduling was not taken, when it was asked for and refused. */
  note?: string;
}

/** The scheduling policy and real-time priority of a thread, from /proc (fields 40 and 41 of its stat line). */
export function threadScheduling(tid: number): ThreadScheduling {
  const stat = readFileSync(`/proc/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields after the command name start at field 3; rt_priority is field 40, policy field 41.
  const priority = Number(fields[40 - 3]);
  const policy = Number(fields[41 - 3]);
  return { policy: policy === 2 ? 'realtime-rr' : policy === 1 ? 'realtime-fifo' : 'normal', priority };
}

/**
 * Puts the calling process's main thread under real-time round-robin scheduling at `priority` (1–99; 0
 * leaves it alone), through util-linux's `chrt` (part of every Debian-based image). On one busy core the
 * default scheduler lets a running thread finish its slice (a few milliseconds) before a thread that woke
 * up takes over, and that delay is the pacing jitter left once nothing else holds the sender back; a
 * real-time thread is run the moment it wakes. It needs CAP_SYS_NICE or a real-time limit (`ulimit -r`,
 * Docker `--ulimit rtprio=N` or `--cap-add SYS_NICE`); without either, scheduling stays normal and the
 * returned note says why. The sender sleeps between ticks and works about 1 ms per tick at 40 calls, and
 * the kernel keeps 5 % of every second for normal threads whatever a real-time thread does.
 */
export function requestRealtimeScheduling(priority: number): ThreadScheduling {
  if (priority === 0 || process.platform !== 'linux') return { policy: 'normal', priority: 0 };
  try {
    execFileSync('chrt', ['--rr', '--pid', String(priority), String(process.pid)], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 5000,
    });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    const reason = stderr || (error instanceof Error ? error.message : String(error));
    return { policy: 'normal', priority: 0, note: `real-time scheduling refused: ${reason}` };
  }
  return threadScheduling(process.pid);
}
