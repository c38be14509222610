import { readFile, readdir, readlink } from 'node:fs/promises';

/**
 * Whether a process Hermes recorded (a registry claim's owner, a turn marker's writer) is still the
 * process that wrote the record: Hermes pairs each pid with its start time so a recycled pid reads as
 * dead (`hermes_cli.active_sessions._pid_liveness`). `unknown` is never taken as proof of death.
 */
export type Liveness = 'alive' | 'dead' | 'unknown';

/**
 * USER_HZ, the unit of /proc/<pid>/stat's start time. The kernel fixes it at 100 for user space on every
 * architecture Node runs on (psutil reads it with sysconf(SC_CLK_TCK), which answers the same).
 */
const CLOCK_TICKS_PER_S = 100;

/**
 * How far two readings of one process's start time may differ and still name that process. psutil adds
 * /proc/stat's `btime` (whole seconds, recomputed by the kernel from the wall clock on each read, so it
 * can step by a second after a clock adjustment) to the start offset, and Hermes compares to within
 * 1 ms. A difference this small is not proof the pid was reused (a reused pid starts much later), so it
 * answers `unknown` rather than `dead`: only a provably dead writer's marker may be ignored.
 */
const BOOT_TIME_JITTER_S = 1.001;

/** Hermes' own comparison: the same process when the start times agree to within 1 ms. */
const SAME_START_S = 0.001;

/** Where process start times can be read the way Hermes' psutil reads them. */
export function canReadProcessStarts(): boolean {
  return process.platform === 'linux';
}

async function bootTimeS(): Promise<number | null> {
  try {
    const stat = await readFile('/proc/stat', 'utf8');
    const line = stat.split('\n').find((l) => l.startsWith('btime '));
    const value = line ? Number(line.split(/\s+/)[1]) : NaN;
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * A process's start time in seconds since the epoch, exactly as psutil's `Process.create_time()` computes
 * it on Linux (Hermes' `process_start_time`): field 22 of /proc/<pid>/stat in clock ticks, divided by
 * USER_HZ, plus /proc/stat's boot time. Null where it cannot be read (gone, not Linux).
 */
export async function processStartTime(pid: number): Promise<number | null> {
  if (!canReadProcessStarts() || !Number.isInteger(pid) || pid <= 0) return null;
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces or ')': count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields after the name start at field 3 (state); the start time is field 22.
  const ticks = Number(fields[22 - 3]);
  const boot = await bootTimeS();
  if (!Number.isFinite(ticks) || boot === null) return null;
  return ticks / CLOCK_TICKS_PER_S + boot;
}

/** kill(pid, 0): a pid that exists answers (EPERM too: it exists, owned by someone else). */
function pidExists(pid: number): boolean | null {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return false;
    if (code === 'EPERM') return true;
    return null;
  }
}

/** Python's `float(value)` for the values a registry or marker holds; null where Hermes gets None. */
export function optionalFloat(value: unknown): number | null {
  if (value === null || value === undefined || value === '' || typeof value === 'boolean') return null;
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value.trim() !== '') {
    const parsed = Number(value.trim());
    return Number.isNaN(parsed) ? null : parsed;
  }
  return null;
}

/**
 * `_pid_liveness(pid, process_start_time)` as Hermes decides it (not lenient): a pid that isn't a
 * positive integer is `unknown`; a pid no process has is `dead`; a live pid without a recorded start is
 * `alive`; a start time that cannot be read now is `unknown`; otherwise the start times decide.
 */
export async function pidLiveness(pid: number, recordedStart: unknown): Promise<Liveness> {
  if (!Number.isInteger(pid) || pid <= 0) return 'unknown';
  const exists = pidExists(pid);
  if (exists === null) return 'unknown';
  if (!exists) return 'dead';
  const expected = optionalFloat(recordedStart);
  if (expected === null) return 'alive';
  const current = await processStartTime(pid);
  if (current === null) return 'unknown';
  const apart = Math.abs(current - expected);
  if (apart < SAME_START_S) return 'alive';
  return apart <= BOOT_TIME_JITTER_S ? 'unknown' : 'dead';
}

/** The inodes of the TCP sockets listening on `port` (IPv4 and IPv6), from /proc/net. */
async function listeningInodes(port: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = await readFile(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      // st 0A is TCP_LISTEN; the inode is the tenth column.
      if (!local || cols[3] !== '0A' || cols[9] === undefined) continue;
      if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) inodes.add(cols[9]);
    }
  }
  return inodes;
}

/**
 * Whether `pid` holds a socket listening on `port`: how this host recognises the Hermes dashboard it
 * fronts among a registry's claim owners (its claims are this host's own, `same_host`). Only the given
 * pid's descriptors are read; false wherever /proc can't tell (another user's process, not Linux).
 */
export async function processListensOn(pid: number, port: number): Promise<boolean> {
  if (!canReadProcessStarts() || !Number.isInteger(pid) || pid <= 0) return false;
  const inodes = await listeningInodes(port);
  if (inodes.size === 0) return false;
  let fds: string[];
  try {
    fds = await readdir(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode !== undefined && inodes.has(inode)) return true;
  }
  return false;
}
