/** Shared set-up for the messenger tests: fakes, a temporary state directory, a config, polling. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readMessengerConfig, type MessengerConfig } from '../../src/messenger/config.js';
import { FakeHermes, type RunScript } from './fakes/fake-hermes.js';
import { FakeRelay, type FakeRelayOptions } from './fakes/fake-relay.js';

export const RELAY_TOKEN = 'relay-agent-token-for-tests';
export const HERMES_KEY = 'hermes-api-key-for-tests';

export function tempDir(prefix = 'msgr-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export async function waitFor<T>(
  probe: () => T | undefined | false | null,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false && v !== null) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface Fakes {
  relay: FakeRelay;
  hermes: FakeHermes;
  stateDir: string;
  config(extra?: Record<string, string>): MessengerConfig;
  env(extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

export async function startFakes(
  options: { script?: RunScript; relay?: Partial<FakeRelayOptions> } = {},
): Promise<Fakes> {
  const relay = new FakeRelay({ token: RELAY_TOKEN, ...options.relay });
  const hermes = new FakeHermes(HERMES_KEY, options.script);
  await relay.listen();
  await hermes.listen();
  const stateDir = path.join(tempDir(), 'relay');
  const env = (extra: Record<string, string> = {}) => ({
    RELAY_AGENT_TOKEN: RELAY_TOKEN,
    RELAY_BASE_URL: relay.url,
    RELAY_STATE_DIR: stateDir,
    HERMES_API_URL: hermes.url,
    API_SERVER_KEY: HERMES_KEY,
    ...extra,
  });
  return {
    relay,
    hermes,
    stateDir,
    env,
    config: (extra = {}) => readMessengerConfig(env(extra), path.dirname(stateDir)),
    close: async () => {
      await relay.close();
      await hermes.close();
    },
  };
}
