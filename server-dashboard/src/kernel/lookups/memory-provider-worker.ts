import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import type { Logger } from '../../log.js';
import { childEnvironment } from '../hermes-python.js';

/**
 * Recall through the profile's external memory provider (`memory.provider`: Honcho, Mem0, Hindsight,
 * Holographic, …). Those providers are Python plugins of Hermes, so this service runs them the way
 * Hermes does: a worker process per profile on Hermes' own Python interpreter, which loads the provider
 * with Hermes' `plugins.memory.load_memory_provider(name)`, checks `is_available()`, calls
 * `initialize(session_id="conduit-voice", platform="conduit_voice", hermes_home, agent_context="primary",
 * agent_identity=<profile>, agent_workspace="hermes")` once, and then answers one `prefetch(query,
 * session_id="conduit-voice")` at a time over line-delimited JSON on its stdin/stdout. Read only: no
 * sync_turn, no memory tool. The provider's own error text goes to the worker's stderr, which is
 * dropped (it stays in Hermes' own logs when Hermes runs it), never into a route's answer or our log.
 */

/** The worker, written to a child's `-c`; Hermes' packages are on its interpreter's path. */
const WORKER_SOURCE = String.raw`
import json, os, sys
def say(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
home, profile, name = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    env_file = os.path.join(home, ".env")
    if os.path.exists(env_file):
        try:
            from dotenv import load_dotenv
            load_dotenv(env_file, override=True)
        except ImportError:
            pass
    from plugins.memory import load_memory_provider
    provider = load_memory_provider(name)
    if provider is None:
        say({"ready": False, "why": "not_found"}); sys.exit(0)
    if not provider.is_available():
        say({"ready": False, "why": "unavailable"}); sys.exit(0)
    provider.initialize(session_id="conduit-voice", platform="conduit_voice", hermes_home=home,
                        agent_context="primary", agent_identity=profile, agent_workspace="hermes")
except Exception as error:
    sys.stderr.write("conduit memory worker: start failed: %r\n" % (error,))
    say({"ready": False, "why": "failed"}); sys.exit(0)
say({"ready": True})
for line in sys.stdin:
    try:
        request = json.loads(line)
        results = provider.prefetch(str(request["query"]), session_id="conduit-voice")
        say({"id": request["id"], "ok": True, "results": results if isinstance(results, str) else ""})
    except Exception as error:
        sys.stderr.write("conduit memory worker: prefetch failed: %r\n" % (error,))
        say({"id": request.get("id") if isinstance(request, dict) else None, "ok": False})
try:
    provider.shutdown()
except Exception:
    pass
`;

const readyLine = z.object({ ready: z.boolean(), why: z.string().optional() });
const answerLine = z.object({ id: z.number().nullable(), ok: z.boolean(), results: z.string().optional() });

/** A failed start is tried again only after this long (ROUTES.md, Memory). */
export const FAILED_START_RETRY_MS = 60_000;
/** The longest answer line read from a worker; a provider's recall is clipped to 4,000 characters anyway. */
const MAX_LINE_CHARS = 1024 * 1024;

export class ProviderFailed extends Error {}
export class ProviderBusy extends Error {}

type WorkerChild = ChildProcessByStdio<Writable, Readable, null>;

interface Worker {
  provider: string;
  child: WorkerChild;
  ready: Promise<boolean>;
  busy: boolean;
  nextId: number;
  pending: Map<number, { resolve(results: string): void; reject(error: Error): void }>;
}

export interface ProviderWorkersOptions {
  /** Hermes' Python, or null when this machine has none (recall is then never offered). */
  python: string | null;
  /** Milliseconds since the epoch, for the failed-start window. */
  now: () => number;
  log: Logger;
}

/**
 * One memory-provider worker per profile home, started on first use, replaced when `memory.provider`
 * changes, tried again a minute after a failed start. Calls into one worker run one at a time: while
 * one is running (or hung), the next is refused at once (`ProviderBusy`, 503), and other profiles are
 * unaffected.
 */
export class ProviderWorkers {
  private readonly workers = new Map<string, Worker>();
  private readonly failedAt = new Map<string, { provider: string; at: number }>();

  constructor(private readonly options: ProviderWorkersOptions) {}

  /** Whether the profile's provider is running (starting it if it is not), i.e. whether recall works. */
  async started(home: string, profile: string, provider: string): Promise<boolean> {
    const worker = this.workerFor(home, profile, provider);
    return worker ? worker.ready : false;
  }

  /** The provider's recall for `query`; throws ProviderBusy, ProviderFailed, or answers null without one. */
  async recall(home: string, profile: string, provider: string, query: string): Promise<string | null> {
    const worker = this.workerFor(home, profile, provider);
    if (!worker || !(await worker.ready)) return null;
    if (worker.busy) throw new ProviderBusy();
    worker.busy = true;
    const id = worker.nextId++;
    try {
      return await new Promise<string>((resolve, reject) => {
        worker.pending.set(id, { resolve, reject });
        worker.child.stdin.write(`${JSON.stringify({ id, query })}\n`);
      });
    } finally {
      worker.busy = false;
      worker.pending.delete(id);
    }
  }

  /** Stops every worker (the service is closing). */
  close(): void {
    for (const worker of this.workers.values()) worker.child.kill('SIGKILL');
    this.workers.clear();
  }

  private workerFor(home: string, profile: string, provider: string): Worker | null {
    const running = this.workers.get(home);
    if (running && running.provider === provider) return running;
    if (running) {
      // memory.provider changed: the old provider goes, the new one starts.
      this.workers.delete(home);
      running.child.kill('SIGKILL');
    }
    const failed = this.failedAt.get(home);
    if (failed && failed.provider === provider && this.options.now() - failed.at < FAILED_START_RETRY_MS) return null;
    if (!this.options.python) return null;
    const worker = this.start(this.options.python, home, profile, provider);
    this.workers.set(home, worker);
    return worker;
  }

  private start(python: string, home: string, profile: string, provider: string): Worker {
    // Only what Python and the provider need: never this service's tokens or keys. The provider reads
    // its own keys from the profile's .env, as Hermes does.
    const env = childEnvironment(home);
    const child = spawn(python, ['-c', WORKER_SOURCE, home, profile, provider], {
      cwd: home,
      env,
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    const worker: Worker = {
      provider,
      child,
      busy: false,
      nextId: 1,
      pending: new Map(),
      ready: Promise.resolve(false),
    };
    let settleReady: (ready: boolean) => void = () => undefined;
    worker.ready = new Promise<boolean>((resolve) => {
      settleReady = resolve;
    });
    const fail = (why: string) => {
      settleReady(false);
      if (this.workers.get(home) === worker) this.workers.delete(home);
      this.failedAt.set(home, { provider, at: this.options.now() });
      this.options.log.warn('memory provider did not start', { profile, provider, why });
    };
    const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
    let first = true;
    lines.on('line', (line) => {
      if (line.length > MAX_LINE_CHARS) return;
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch {
        return; // a provider printing to stdout: not ours
      }
      if (first) {
        const ready = readyLine.safeParse(json);
        if (!ready.success) return;
        first = false;
        if (ready.data.ready) {
          this.failedAt.delete(home);
          settleReady(true);
        } else {
          fail(ready.data.why ?? 'failed');
        }
        return;
      }
      const answer = answerLine.safeParse(json);
      if (!answer.success || answer.data.id === null) return;
      const waiter = worker.pending.get(answer.data.id);
      if (!waiter) return;
      if (answer.data.ok) waiter.resolve(answer.data.results ?? '');
      else waiter.reject(new ProviderFailed());
    });
    child.on('error', () => fail('spawn_failed'));
    child.on('exit', () => {
      if (first) fail('exited');
      for (const waiter of worker.pending.values()) waiter.reject(new ProviderFailed());
      worker.pending.clear();
      if (this.workers.get(home) === worker) this.workers.delete(home);
    });
    child.stdin.on('error', () => undefined); // a worker gone mid-write: its exit answers the waiter
    return worker;
  }
}
