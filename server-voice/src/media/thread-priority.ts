import { readdirSync } from 'node:fs';
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
