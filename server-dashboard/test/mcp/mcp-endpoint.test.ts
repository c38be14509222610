import { statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectMcp } from '../support/mcp-client.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { MCP_PATH } from '../../src/mcp/mcp-endpoint.js';
import { mcpTokenPath, readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

let home: ReturnType<typeof tempHermesHome>;
let host: Host & { url: string };
let token: string;

beforeEach(async () => {
  home = tempHermesHome();
  host = await startHost(testConfig(home.root));
  token = await readOrCreateMcpToken(path.join(home.root, 'conduit-host'));
});
afterEach(async () => {
  await host.app.close();
  home.cleanup();
});

function connect(profile: string | null, bearer: string | null): Promise<Client> {
  return connectMcp(host.url, bearer, profile);
}

describe('the MCP endpoint (streamable HTTP, SDK client)', () => {
  it('lists the conduit tools and answers conduit_status for the profile in the URL', async () => {
    const profileHome = path.join(home.root, 'profiles', 'work');
    writeFileSync(
      path.join(profileHome, 'conduit-push.json'),
      JSON.stringify({
        credential: 'secret-credential-value',
        installation_id: '11111111-2222-4333-8444-555555555555',
        gateway_id: '66666666-7777-4888-9999-aaaaaaaaaaaa',
        gateway_name: 'studio',
        relay_url: 'https://relay.example.test/',
        redact_content: true,
      }),
      { mode: 0o600 },
    );
    writeFileSync(path.join(profileHome, 'conduit-cron.json'), JSON.stringify({ v: 1, muted: ['job-7'] }));

    const client = await connect('work', token);
    const tools = await client.listTools();
    // Paired, with "call when I ask" on by default: conduit_call_user is offered too, and the report a
    // call watch's runs make (no Hermes API server here, so no conduit_call_watch).
    expect(tools.tools.map((t) => t.name)).toEqual([
      'conduit_status',
      'conduit_call_user',
      'conduit_watch_report',
      'conduit_maps',
    ]);
    expect(tools.tools[0]?.annotations?.readOnlyHint).toBe(true);

    const result = await client.callTool({ name: 'conduit_status', arguments: {} });
    await client.close();
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({
      profile: 'work',
      paired: true,
      gateway_name: 'studio',
      relay_url: 'https://relay.example.test',
      redact_content: true,
      end_to_end_encryption: 'off',
      notifications: {
        muted_cron_jobs: ['job-7'],
        reply_sources: { conduit: true, desktop: true, messaging: true, terminal: true },
      },
    });
    expect(JSON.stringify(result)).not.toContain('secret-credential-value');
  });

  it('says an unpaired profile is not paired (the default profile when none is named)', async () => {
    const client = await connect(null, token);
    const result = await client.callTool({ name: 'conduit_status', arguments: {} });
    await client.close();
    expect(result.structuredContent).toMatchObject({ profile: 'default', paired: false });
  });

  it('refuses a client without the token, or with a wrong one (401)', async () => {
    await expect(connect(null, null)).rejects.toMatchObject({ code: 401, message: /unauthorized/ });
    await expect(connect(null, 'x'.repeat(43))).rejects.toMatchObject({ code: 401, message: /unauthorized/ });
    const raw = await fetch(new URL(MCP_PATH, host.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('answers an unknown profile 503 and a malformed body 400, never 500', async () => {
    const post = (query: string, body: string) =>
      fetch(new URL(MCP_PATH + query, host.url), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body,
      });
    expect((await post('?profile=missing', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')).status).toBe(503);
    expect((await post('', '{not json')).status).toBe(400);
    const get = await fetch(new URL(MCP_PATH, host.url), { headers: { authorization: `Bearer ${token}` } });
    expect(get.status).toBe(405);
  });

  it('is served by the host itself when it fronts a dashboard (never proxied)', async () => {
    const fronting = await startHost(
      testConfig(home.root, {
        stateDir: path.join(home.root, 'conduit-host'),
        fronting: { mode: 'dashboard', dashboardUrl: 'http://127.0.0.1:9' },
      }),
    );
    try {
      const client = await connectMcp(fronting.url, token);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['conduit_status']);
      await client.close();
    } finally {
      await fronting.app.close();
    }
  });

  it('keeps one token across restarts, in a 0600 file', async () => {
    expect(await readOrCreateMcpToken(path.join(home.root, 'conduit-host'))).toBe(token);
    expect(statSync(mcpTokenPath(path.join(home.root, 'conduit-host'))).mode & 0o777).toBe(0o600);
  });
});
