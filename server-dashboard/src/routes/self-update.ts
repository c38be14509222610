import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { postPluginUpdate } from '@conduit/contracts/dashboard/capabilities';
import { bindRoute } from '@conduit/contracts/server';
import { answerWithDetail, DetailError } from '../kernel/detail-errors.js';
import type { Logger } from '../log.js';

/**
 * The app's "Update plugin" for this service (the seed, "Updating from Conduit"): Conduit calls Hermes'
 * plugin update for `conduit_push`, restarts the gateway, then calls `POST /self/restart`. Hermes would
 * `git pull` its `plugins/conduit_push` folder, which here holds only the CLI shim `setup-hermes` wrote,
 * so this service answers that route itself and brings its own checkout up to date the way this
 * README installs it: `git pull --ff-only`, then, when anything came in, `npm ci` and `npm run build`.
 * The code the process already loaded keeps running until the restart.
 */

export interface SelfUpdaterOptions {
  /** The checkout this service runs from (the folder holding `.git`), or null when it is not one. */
  root: string | null;
  /** What runs after a pull that changed something, in order (default: `npm ci`, `npm run build`). */
  buildSteps?: readonly (readonly string[])[];
  /** Each command's bound (default 10 minutes: `npm ci` on a slow disk). */
  stepTimeoutMs?: number;
  /** The environment the commands see (default: a short allow-list of this process's; tests pass theirs). */
  env?: Readonly<Record<string, string>>;
}

export interface SelfUpdateResult {
  output: string;
  unchanged: boolean;
}

const DEFAULT_BUILD: readonly (readonly string[])[] = [
  ['npm', 'ci', '--no-audit', '--no-fund'],
  ['npm', 'run', 'build'],
];

/**
 * What git, npm and the build need — network proxies, the SSH agent for an ssh remote, npm's own
 * settings — and none of this service's tokens or keys.
 */
const PASSED_ENV =
  /^(PATH|HOME|USER|LANG|LC_[A-Z]+|TZ|TMPDIR|SSH_AUTH_SOCK|GIT_SSH_COMMAND|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY|npm_config_[a-z_]+|NODE_EXTRA_CA_CERTS)$/;

function updateEnvironment(): Record<string, string> {
  const env: Record<string, string> = { GIT_TERMINAL_PROMPT: '0' };
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && PASSED_ENV.test(name)) env[name] = value;
  }
  return env;
}

/** The suite's root package name: only a checkout of this project is ever pulled and built. */
export const SUITE_PACKAGE = 'conduit-suite';

function packageName(dir: string): string | null {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    return typeof parsed === 'object' && parsed !== null && 'name' in parsed && typeof parsed.name === 'string'
      ? parsed.name
      : null;
  } catch {
    return null;
  }
}

/**
 * The checkout this package runs from: the nearest folder above it holding `.git`, and only when that
 * folder is this suite's root (its package.json names `conduit-suite`) — a service installed inside some
 * other repository (a dotfiles home, say) must never pull and build that one. Null otherwise.
 */
export function installRoot(from: string = fileURLToPath(new URL('../..', import.meta.url))): string | null {
  let dir = path.resolve(from);
  for (;;) {
    if (existsSync(path.join(dir, '.git'))) return packageName(dir) === SUITE_PACKAGE ? dir : null;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** Text safe to hand back: no `user:token@` in a remote URL, printable, short. */
function shown(text: string, max = 2000): string {
  const clean = text
    .replace(/(\w+:\/\/)[^/\s@]+@/g, '$1')
    .replace(/[^\x20-\x7e\n]/g, '')
    .trim();
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}

class StepFailed extends Error {
  constructor(
    readonly step: string,
    readonly detail: string,
  ) {
    super(step);
  }
}

export class SelfUpdater {
  private running = false;
  private readonly env: Readonly<Record<string, string>>;

  constructor(private readonly options: SelfUpdaterOptions) {
    this.env = options.env ?? updateEnvironment();
  }

  private run(root: string, argv: readonly string[]): Promise<string> {
    const [file, ...args] = argv;
    if (!file) return Promise.reject(new StepFailed('(none)', 'no command'));
    return new Promise((resolve, reject) => {
      execFile(
        file,
        args,
        {
          cwd: root,
          env: this.env,
          timeout: this.options.stepTimeoutMs ?? 10 * 60_000,
          maxBuffer: 16 * 1024 * 1024,
          killSignal: 'SIGKILL',
        },
        (error, stdout, stderr) => {
          if (!error) {
            resolve(stdout);
            return;
          }
          const timedOut = (error as { killed?: boolean }).killed === true;
          const last = shown(stderr || stdout)
            .split('\n')
            .filter(Boolean)
            .slice(-3)
            .join(' / ');
          reject(new StepFailed(argv.join(' '), timedOut ? 'it took too long and was stopped' : last || error.message));
        },
      );
    });
  }

  /** Runs one update; throws DetailError 400/409 with a clear reason. */
  async update(): Promise<SelfUpdateResult> {
    const root = this.options.root;
    if (root === null) {
      throw new DetailError(400, 'This Conduit host is not a git checkout; cannot pull updates. Update it by hand.');
    }
    if (this.running) throw new DetailError(409, 'An update is already running');
    this.running = true;
    try {
      let pulled: string;
      try {
        pulled = await this.run(root, ['git', 'pull', '--ff-only']);
      } catch (error) {
        const detail = error instanceof StepFailed ? error.detail : 'git could not run';
        throw new DetailError(400, `git pull failed: ${detail}`);
      }
      if (/Already up[ -]to[ -]date/i.test(pulled)) return { output: shown(pulled), unchanged: true };
      const lines = [shown(pulled)];
      for (const step of this.options.buildSteps ?? DEFAULT_BUILD) {
        try {
          await this.run(root, step);
        } catch (error) {
          const detail = error instanceof StepFailed ? error.detail : 'it could not run';
          throw new DetailError(
            400,
            `The update was pulled but \`${step.join(' ')}\` failed (${detail}); the running service is unchanged. ` +
              `Run \`npm ci && npm run build\` in ${root}, then restart it.`,
          );
        }
        lines.push(`${step.join(' ')}: done`);
      }
      return { output: lines.join('\n'), unchanged: false };
    } finally {
      this.running = false;
    }
  }
}

/** `POST /api/dashboard/agent-plugins/conduit_push/update`, inside the authenticated scope. */
export function selfUpdateRoute(app: FastifyInstance, options: { updater: SelfUpdater; log: Logger }): void {
  void app.register(async (scope) => {
    answerWithDetail(scope, {
      bodyLimitBytes: 4096,
      failure: (_request, type) => `The plugin update failed on the host (${type})`,
    });
    bindRoute(scope, postPluginUpdate, async () => {
      options.log.info('plugin update requested');
      const result = await options.updater.update();
      options.log.info('plugin update finished', { unchanged: result.unchanged });
      return {
        status: 200,
        body: { ok: true as const, name: 'conduit_push' as const, ...result },
        headers: { 'Cache-Control': 'no-store' },
      };
    });
  });
}
