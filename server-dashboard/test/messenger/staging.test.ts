import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { readMessengerConfig } from '../../src/messenger/config.js';
import { STAGING_ORIGIN, stagingRefusal } from '../../src/messenger/staging.js';
import { RELAY_TOKEN, startFakes, tempDir, type Fakes } from './harness.js';
import { runCli } from './process.js';

let fakes: Fakes;

beforeEach(async () => {
  fakes = await startFakes();
});

afterEach(async () => {
  await fakes.close();
});

describe('messenger staging (the isolated staging helper)', () => {
  it('refuses every API origin but staging before any work: no upgrade, no REST, no inbox', async () => {
    const out = await runCli('staging', fakes.env());
    expect(out.code).toBe(78);
    expect(out.output).toContain(`refuses every API origin but ${STAGING_ORIGIN}`);
    expect(out.output).not.toContain(RELAY_TOKEN);
    expect(fakes.relay.upgrades).toHaveLength(0);
    expect(fakes.relay.requests).toHaveLength(0);
    expect(fs.existsSync(fakes.stateDir)).toBe(false);
  });

  it('takes the staging origin only with a state directory of its own', () => {
    const home = tempDir();
    const env = { RELAY_AGENT_TOKEN: 'staging-agent-token', RELAY_BASE_URL: STAGING_ORIGIN };
    expect(stagingRefusal(readMessengerConfig(env, home))).toMatch(/its own RELAY_STATE_DIR/);
    const own = readMessengerConfig({ ...env, RELAY_STATE_DIR: path.join(home, 'relay-staging') }, home);
    expect(stagingRefusal(own)).toBeNull();
  });
});
