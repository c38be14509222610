import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { freePort, startServerProcess } from '@conduit/contracts/testing';
import { runPush, type PushCliDeps } from '../../src/pairing/cli.js';
import { createRelayApi } from '../../src/pairing/relay-api.js';

const REPO = path.resolve(new URL('.', import.meta.url).pathname, '../../..');
/** The bundle id the test relay pushes to (APNS_TOPIC). */
export const RELAY_TOPIC = 'dev.conduit.test';
const TOPIC = RELAY_TOPIC;

/**
 * The real relay (server-relay) as a separate process for the host's tests: APNs in accept mode with
 * every push written to `capture.jsonl`, and a profile paired with it as `conduit push pair` does.
 */
export class RealRelay {
  private constructor(
    readonly url: string,
    private readonly server: Awaited<ReturnType<typeof startServerProcess>>,
  ) {}

  /**
   * Starts the relay from its sources with its SQLite store and APNs capture in `root` (`relay.sqlite`,
   * `capture.jsonl`); `env` adds to or overrides its settings (a Maps key, say).
   */
  static async start(root: string, env: Record<string, string> = {}): Promise<RealRelay> {
    const port = await freePort();
    const server = await startServerProcess({
      name: 'relay',
      command: path.join(REPO, 'node_modules/.bin/tsx'),
      args: [path.join(REPO, 'server-relay/src/main.ts')],
      cwd: REPO,
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_PATH: path.join(root, 'relay.sqlite'),
        PUBLIC_URL: 'https://relay.invalid',
        APNS_TOPIC: TOPIC,
        APNS_MODE: 'accept',
        APNS_CAPTURE_PATH: path.join(root, 'capture.jsonl'),
        ...env,
      },
      port,
      ready: async (url) => (await fetch(`${url}/healthz`)).ok,
      timeoutMs: 60_000,
    });
    return new RealRelay(`http://127.0.0.1:${port}`, server);
  }

  get output(): string {
    return this.server.output();
  }

  /** The relay process (a test that kills it, or waits for its exit). */
  get child(): ChildProcess {
    return this.server.child;
  }

  async stop(): Promise<void> {
    const child = this.server.child;
    if (child.exitCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await exited;
  }

  /**
   * Pairs the profile home `dir` with this relay as `conduit push pair` does, with a code a phone
   * minted (a phone each: the relay lets one installation mint only a few codes a minute).
   */
  async pair(dir: string): Promise<void> {
    const registered = await this.post('/v1/installations', {
      bundle_id: TOPIC,
      device_token: randomBytes(32).toString('hex'),
      environment: 'production',
    });
    const id = (registered.installation as { id: string }).id;
    const pairing = await this.post(`/v1/installations/${id}/pairings`, {}, String(registered.credential));
    const deps: PushCliDeps = {
      env: {},
      out: () => undefined,
      err: () => undefined,
      relay: createRelayApi({ userAgent: 'Conduit-Host/test' }),
      hostname: () => 'box',
      clock: Date.now,
      randomBytes: (n) => new Uint8Array(randomBytes(n)),
      identity: { version: '0.1.0', capabilities: ['version-reporting', 'e2e-v1'] },
    };
    const code = await runPush(['pair', String(pairing.pairing_code), '--relay-url', this.url, '--home', dir], deps);
    if (code !== 0) throw new Error(`pairing ${dir} failed (${code})`);
  }

  private async post(route: string, body: unknown, bearer?: string): Promise<Record<string, unknown>> {
    const response = await fetch(`${this.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${route}: ${response.status} ${this.output}`);
    return (await response.json()) as Record<string, unknown>;
  }
}
