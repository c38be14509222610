import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const PACKAGE_ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.resolve(PACKAGE_ROOT, '../node_modules/.bin/tsx');

/**
 * Runs in a child process (renicing is one-way without privileges, and must not touch the test runner): it
 * lowers the helper threads, starts one more (a worker thread) for the re-scan, and reports every
 * thread's nice value from /proc.
 */
const SCRIPT = `
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { lowerHelperThreadPriority } from './src/media/thread-priority.ts';
const nices = () => Object.fromEntries(readdirSync('/proc/self/task').map((t) => {
  const fields = readFileSync('/proc/self/task/' + t + '/stat', 'utf8').split(') ')[1].split(' ');
  return [t, Number(fields[16])];
}));
const helpers = lowerHelperThreadPriority({ rescanMs: 60_000 });
const first = nices();
const worker = new Worker('setInterval(() => {}, 1000)', { eval: true });
await new Promise((resolve) => worker.once('online', resolve));
helpers.rescan();
helpers.stop();
console.log(JSON.stringify({ pid: process.pid, first, after: nices(), lowered: [...helpers.lowered] }));
await worker.terminate();
`;

describe('helper threads yield to the event loop that paces audio', () => {
  it('lowers every thread but the main one to nice 19, and finds threads started later', () => {
    const output = execFileSync(TSX, ['--input-type=module', '-e', SCRIPT], { cwd: PACKAGE_ROOT, encoding: 'utf8' });
    const report = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as {
      pid: number;
      first: Record<string, number>;
      after: Record<string, number>;
      lowered: number[];
    };
    const main = String(report.pid);
    expect(report.first[main]).toBe(0);
    expect(report.after[main]).toBe(0);
    const helpersFirst = Object.keys(report.first).filter((tid) => tid !== main);
    expect(helpersFirst.length).toBeGreaterThan(0);
    for (const tid of helpersFirst) expect(report.first[tid], `thread ${tid}`).toBe(19);
    // The worker's threads appeared after the first scan and were lowered by the re-scan.
    const started = Object.keys(report.after).filter((tid) => !(tid in report.first));
    expect(started.length).toBeGreaterThan(0);
    for (const tid of Object.keys(report.after).filter((tid) => tid !== main))
      expect(report.after[tid], `thread ${tid}`).toBe(19);
    expect(new Set(report.lowered.map(String))).toEqual(new Set(Object.keys(report.after).filter((t) => t !== main)));
  });
});

/** Asks for real-time scheduling in a child process and reports what it got and what `chrt -p` says. */
const REALTIME_SCRIPT = `
import { execFileSync } from 'node:child_process';
import { requestRealtimeScheduling } from './src/media/thread-priority.ts';
const got = requestRealtimeScheduling(Number(process.env.PRIORITY));
const chrt = execFileSync('chrt', ['--pid', String(process.pid)], { encoding: 'utf8' });
console.log(JSON.stringify({ got, chrt }));
`;

function requestIn(priority: number, wrapper: string[] = []): { got: Record<string, unknown>; chrt: string } {
  const command = [...wrapper, TSX, '--input-type=module', '-e', REALTIME_SCRIPT];
  const output = execFileSync(command[0]!, command.slice(1), {
    cwd: PACKAGE_ROOT,
    encoding: 'utf8',
    env: { ...process.env, PRIORITY: String(priority) },
  });
  return JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as { got: Record<string, unknown>; chrt: string };
}

describe('real-time scheduling of the media sender thread', () => {
  it('reports the policy and priority the kernel actually gave, as chrt sees them', () => {
    const { got, chrt } = requestIn(12);
    if (got.policy === 'realtime-rr') {
      expect(got).toEqual({ policy: 'realtime-rr', priority: 12 });
      expect(chrt).toMatch(/policy: SCHED_RR/);
      expect(chrt).toMatch(/priority: 12/);
    } else {
      // An unprivileged runner: refused, said why, and left normal.
      expect(got).toMatchObject({ policy: 'normal', priority: 0, note: expect.stringMatching(/refused/) });
      expect(chrt).toMatch(/policy: SCHED_OTHER/);
    }
  });

  it('stays normal and says why when the system refuses (no CAP_SYS_NICE, no rtprio limit)', () => {
    // As root, drop CAP_SYS_NICE for the child; any other user has neither it nor (by default) a limit.
    const wrapper = process.getuid?.() === 0 ? ['setpriv', '--bounding-set', '-sys_nice'] : [];
    const { got, chrt } = requestIn(12, wrapper);
    expect(got).toMatchObject({ policy: 'normal', priority: 0 });
    expect(String(got.note)).toMatch(/real-time scheduling refused: .*not permitted/i);
    expect(chrt).toMatch(/policy: SCHED_OTHER/);
  });

  it('asks for nothing at priority 0', () => {
    const { got, chrt } = requestIn(0);
    expect(got).toEqual({ policy: 'normal', priority: 0 });
    expect(chrt).toMatch(/policy: SCHED_OTHER/);
  });
});
