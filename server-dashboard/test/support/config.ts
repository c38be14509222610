import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { HostConfig } from '../../src/config.js';
import { ManualClock, systemClock } from '../../src/clock.js';
import { defaultLimits, type Limits } from '../../src/limits.js';
import { silentLogger } from '../../src/log.js';

/** A fresh Hermes root home in a temp folder, with a `work` profile beside the default one. */
export function tempHermesHome(): { root: string; cleanup: () => void } {
  const root = mkdtempSync(path.join(os.tmpdir(), 'conduit-hermes-'));
  mkdirSync(path.join(root, 'profiles', 'work'), { recursive: true });
  return { root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export const TEST_TOKEN = 'standalone-test-token-0123456789';

export function testConfig(
  root: string,
  overrides: Omit<Partial<HostConfig>, 'limits'> & { limits?: Partial<Limits> } = {},
): HostConfig {
  const { limits, ...rest } = overrides;
  return {
    host: '127.0.0.1',
    port: 0,
    loadedVersion: '0.1.0',
    readDiskVersion: () => '0.1.0',
    hermesHome: root,
    stateDir: path.join(root, 'conduit-host'),
    fronting: { mode: 'standalone', bearerToken: TEST_TOKEN },
    limits: { ...defaultLimits(), retryBaseMs: 5, retryMaxMs: 20, clarifyPollMs: 5, replyHoldMs: 60_000, ...limits },
    clock: systemClock,
    log: silentLogger,
    ...rest,
  };
}

export { ManualClock };
