import type { FastifyInstance } from 'fastify';
import { postSelfRestart } from '@conduit/contracts/dashboard/capabilities';
import { bindRoute } from '@conduit/contracts/server';
import type { HostConfig } from '../config.js';
import type { HostActivity } from '../kernel/activity.js';
import { answerWithDetail, DetailError } from '../kernel/detail-errors.js';
import type { Logger } from '../log.js';

/**
 * How this process restarts itself. The command that started it (`conduit serve`, `npm run host`) makes
 * one; a host embedded anywhere else has none, and the route answers 501.
 */
export interface SelfRestarter {
  /** Why this process cannot re-execute itself, or null when it can. */
  refusal(): string | null;
  /** Re-executes the process (after the answer has gone out). Called at most once. */
  restart(): void;
}

export const NOT_OUR_COMMAND =
  "This host service wasn't started by its own command (conduit serve or npm run host); restart it yourself";

/** The `process.execve` of Node.js 22.15+ and 23.11+ (not in Node 20's types). */
type Execve = (file: string, args?: readonly string[], env?: NodeJS.ProcessEnv) => never;

function execveOf(proc: NodeJS.Process): Execve | null {
  const candidate = (proc as unknown as { execve?: unknown }).execve;
  return typeof candidate === 'function' ? (candidate.bind(proc) as Execve) : null;
}

/**
 * The restart of a service run by its own command: about a second after answering, the service stops
 * listening (`stop`), then the process re-executes itself with the command line and environment it
 * started with. `execve` keeps the pid, so systemd, launchd and a terminal carry on with the new code.
 */
export function processRestarter(options: {
  stop: () => Promise<void>;
  log: Logger;
  delayMs?: number;
  proc?: NodeJS.Process;
}): SelfRestarter {
  const proc = options.proc ?? process;
  let started = false;
  return {
    refusal() {
      if (proc.platform === 'win32') return "This host service can't restart itself on Windows; restart it yourself";
      if (!execveOf(proc)) {
        return "This Node.js can't restart a process in place (Node.js 22.15 or later can); restart the service yourself";
      }
      return null;
    },
    restart() {
      const execve = execveOf(proc);
      if (started || !execve) return;
      started = true;
      setTimeout(() => {
        void (async () => {
          try {
            await options.stop();
          } catch (error) {
            options.log.warn('stopping before the restart failed; restarting anyway', {
              error: error instanceof Error ? error.name : 'Error',
            });
          }
          options.log.info('host service restarting in place', { pid: proc.pid });
          execve(proc.execPath, [proc.execPath, ...proc.execArgv, ...proc.argv.slice(1)], proc.env);
        })();
      }, options.delayMs ?? 1000).unref();
    },
  };
}

/** `POST /self/restart` (the seed, "Updating from Conduit"). */
export function selfRestartRoute(
  app: FastifyInstance,
  options: {
    config: HostConfig;
    bootId: string;
    activity: HostActivity;
    restarter: SelfRestarter | null;
    log: Logger;
  },
): void {
  let restarting = false;
  void app.register(async (scope) => {
    answerWithDetail(scope, {
      bodyLimitBytes: 4096,
      failure: (_request, type) => `Self restart failed on the host (${type})`,
    });
    bindRoute(scope, postSelfRestart, () => {
      const refusal = options.restarter ? options.restarter.refusal() : NOT_OUR_COMMAND;
      if (refusal !== null || !options.restarter) throw new DetailError(501, refusal ?? NOT_OUR_COMMAND);
      if (restarting) throw new DetailError(409, 'A restart is already under way');
      const running = options.activity.current();
      if (running.length > 0) {
        throw new DetailError(409, `A call this host relays is still running (${running[0]}); restart when it ends`);
      }
      restarting = true;
      options.log.info('restart requested', { boot_id: options.bootId });
      options.restarter.restart();
      return {
        status: 200,
        body: {
          ok: true,
          restarting: true,
          boot_id: options.bootId,
          loaded_version: options.config.loadedVersion,
          version: options.config.readDiskVersion(),
        },
        headers: { 'Cache-Control': 'no-store' },
      };
    });
  });
}
