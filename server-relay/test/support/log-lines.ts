import type { ChildProcess } from 'node:child_process';

/** A relay process as the test helpers start it: its child and everything it printed so far. */
export interface LoggingProcess {
  child: ChildProcess;
  output: () => string;
}

/** The JSON lines a process printed (stdout and stderr), from character `from` of its output on. */
export function jsonLines(relay: LoggingProcess, from = 0): Record<string, unknown>[] {
  return relay
    .output()
    .slice(from)
    .split('\n')
    .flatMap((line) => {
      if (!line.startsWith('{')) return [];
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

/**
 * Resolves with the first JSON line (after character `from`) that matches, as soon as the process
 * prints it: woken by the child's own output events, never by a timer; rejects if the process exits
 * first. A test waits on the line, so it never sleeps and asserts that something did not happen.
 */
export function waitForLine(
  relay: LoggingProcess,
  matches: (line: Record<string, unknown>) => boolean,
  from = 0,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const streams = [relay.child.stdout, relay.child.stderr].filter((stream) => stream !== null);
    const check = (): boolean => {
      const found = jsonLines(relay, from).find(matches);
      if (!found) return false;
      for (const stream of streams) stream.off('data', onData);
      relay.child.off('exit', onExit);
      resolve(found);
      return true;
    };
    // The helper's own listener runs first (registered at start), so output() already holds the chunk.
    const onData = (): void => void check();
    const onExit = (): void => {
      if (check()) return;
      for (const stream of streams) stream.off('data', onData);
      reject(new Error(`the process exited before printing the expected line:\n${relay.output().slice(from)}`));
    };
    if (check()) return;
    for (const stream of streams) stream.on('data', onData);
    relay.child.once('exit', onExit);
  });
}
