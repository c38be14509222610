import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { PROBE_SESSION_ID } from '../../src/features/live-activities/reporter.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';

/**
 * `live-activities` in GET /capabilities: listed only while the host's reports work — the profile is
 * paired and its relay takes them. A relay's answer to a real report says so; without one, the host
 * asks once with a report for a session no phone registers.
 */
let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;
let clock: ManualClock;
let host: Host & { url: string };

beforeEach(async () => {
  home = tempHermesHome();
  relay = new FakeRelay();
  await relay.start();
  clock = new ManualClock(Date.UTC(2026, 11, 4, 9, 0, 0));
  host = await startHost(testConfig(home.root, { clock, timers: new ManualTimers() }), { sleep: async () => {} });
});
afterEach(async () => {
  await host.app.close();
  await relay.stop();
  home.cleanup();
});

async function capabilities(): Promise<string[]> {
  const response = await fetch(`${host.url}/api/plugins/conduit_push/capabilities`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { capabilities: string[] }).capabilities;
}

const probes = () => relay.progress.filter((report) => report.session_id === PROBE_SESSION_ID);

describe('the live-activities capability', () => {
  it('is not listed while the profile is not paired (and nothing is asked of any relay)', async () => {
    expect(await capabilities()).not.toContain('live-activities');
    expect(relay.progress).toEqual([]);
  });

  it('is listed once the paired relay takes reports, asked once and then remembered', async () => {
    writePairing(home.root, relay.url);
    expect(await capabilities()).toContain('live-activities');
    expect(probes()).toEqual([
      { session_id: PROBE_SESSION_ID, phase: 'done', tool_count: 0, started_at: expect.any(Number) },
    ]);
    expect(await capabilities()).toContain('live-activities');
    expect(probes()).toHaveLength(1);
    // Unpaired again: not listed, whatever the relay said.
    rmSync(path.join(home.root, 'conduit-push.json'));
    expect(await capabilities()).not.toContain('live-activities');
  });

  it('a relay that answered a real report needs no asking', async () => {
    writePairing(home.root, relay.url);
    await callHook(host.url, host.hookToken, { hook_event_name: 'pre_llm_call', profile: 'default', session_id: 'c1' });
    await host.progress.settled();
    expect(await capabilities()).toContain('live-activities');
    expect(probes()).toEqual([]);
  });

  it('is not listed for a relay without the route, which is not asked again for 30 minutes', async () => {
    writePairing(home.root, relay.url);
    relay.liveActivities = false;
    expect(await capabilities()).not.toContain('live-activities');
    relay.liveActivities = new Set();
    clock.advance(29 * 60_000);
    expect(await capabilities()).not.toContain('live-activities');
    clock.advance(2 * 60_000);
    expect(await capabilities()).toContain('live-activities');
    expect(probes()).toHaveLength(1);
  });

  it('is not listed while its relay cannot be reached; another relay is asked on its own', async () => {
    writePairing(home.root, 'http://127.0.0.1:9');
    expect(await capabilities()).not.toContain('live-activities');
    writePairing(home.root, relay.url);
    expect(await capabilities()).toContain('live-activities');
  });
});
