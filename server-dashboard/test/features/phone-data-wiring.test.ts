import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCATION_LABEL } from '@conduit/contracts/dashboard/location';
import type { Host } from '../../src/app.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { connectMcp } from '../support/mcp-client.js';
import { PhoneStandIn } from '../support/phone-stand-in.js';

/**
 * The phone-data features as the service registers them (HOST_FEATURES, no test list): location's
 * routes, its MCP tool, its voice read and its "Conduit first" mention are all served together.
 */
const home = tempHermesHome();
const clock = new ManualClock(1_780_000_000_000);
const nowS = () => Math.floor(clock.now() / 1000);
let host: Host & { url: string };

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }));
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

async function tools(): Promise<string[]> {
  const client = await connectMcp(host.url, await readOrCreateMcpToken(path.join(home.root, 'conduit-host')));
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

describe('location as the service registers it', () => {
  it('offers its tool, its voice read and its "Conduit first" line once a phone shares location', async () => {
    expect(await tools()).not.toContain('conduit_location');
    const phone = new PhoneStandIn(host.url, 'location', LOCATION_LABEL, 'iphone-1');
    expect((await phone.agree()).status).toBe(200);
    const sent = await phone.send({
      v: 1,
      sharing: {
        foreground: true,
        background: true,
        paused: false,
        retention_days: 7,
        precision: { foreground: 'precise', background: 'area' },
        features: [],
      },
      places: [{ id: 'home', name: 'Home', kind: 'home' }],
      fixes: [
        {
          id: 'f-1',
          at: nowS(),
          layer: 'background',
          kind: 'fix',
          lat: 51.5234,
          lon: -0.0876,
          accuracy_m: 30,
          area: { locality: 'London' },
          distances: [{ place_id: 'home', m: 2400 }],
        },
      ],
    });
    expect(sent.status).toBe(200);

    expect(await tools()).toContain('conduit_location');
    const listing = await fetch(`${host.url}/api/plugins/conduit_push/voice-tools?device_id=iphone-1`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    const body = (await listing.json()) as { tools: { name: string; key: string }[] };
    expect(body.tools.map((tool) => [tool.name, tool.key])).toEqual([['conduit_location', 'location']]);

    clock.advance(60_000);
    const hooked = await callHook(host.url, host.hookToken, {
      hook_event_name: 'pre_llm_call',
      profile: 'default',
      session_id: 'chat-1',
      extra: { turn_id: 't-1' },
    });
    expect(hooked.answer).toEqual({
      context:
        "Conduit: the user's phone shares location with this profile. For that data use the Conduit tool (conduit_location) before other tools, skills or CLIs.",
    });
  });
});
