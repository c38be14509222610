import { mkdtempSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardClient } from '@conduit/sdk/dashboard';
import { createRelayClient } from '@conduit/sdk/relay';
import { createVoiceClient } from '@conduit/sdk/voice';
import { freePort } from '@conduit/contracts/testing';
import { PortInUseError } from '../suite/launch.js';
import { startSuite, type Suite } from '../suite/suite.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'conduit-suite-'));
let suite: Suite;

beforeAll(async () => {
  suite = await startSuite(dataDir, { relay: await freePort(), host: await freePort(), voice: await freePort() });
});
afterAll(async () => {
  await suite?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the one-command suite', () => {
  it('serves the relay health route', async () => {
    const { data } = await createRelayClient({ baseUrl: suite.relay.url }).GET('/healthz');
    expect(data).toEqual({ ok: true });
  });

  it('serves the host capabilities route', async () => {
    const { data } = await createDashboardClient({ baseUrl: suite.host.url }).GET(
      '/api/plugins/conduit_push/capabilities',
    );
    expect(data?.ok).toBe(true);
    expect(data?.restart_needed).toBe(false);
  });

  it('serves voice discovery with the key it created (mode 0600), and 401 without it', async () => {
    expect(statSync(path.join(dataDir, 'voice-api-key')).mode & 0o777).toBe(0o600);
    const authorized = createVoiceClient({
      baseUrl: suite.voice.url,
      headers: { authorization: `Bearer ${suite.voiceApiKey}` },
    });
    expect((await authorized.GET('/v1/realtime/discovery')).data?.realtime_path).toBe('/v1/realtime/calls');
    expect((await createVoiceClient({ baseUrl: suite.voice.url }).GET('/v1/realtime/discovery')).response.status).toBe(
      401,
    );
  });

  it('reports a server that ends without being asked, naming it', async () => {
    // As if the host were stopped from outside: the suite is told which server it lost.
    suite.host.child.kill('SIGTERM');
    const { server, code } = await suite.unexpectedExit;
    expect([server.name, code]).toEqual(['host', 0]);
  });

  it('stops every server on SIGTERM with exit code 0', async () => {
    await suite.stop();
    const codes = await Promise.all([suite.relay.exited, suite.host.exited, suite.voice.exited]);
    expect(codes).toEqual([0, 0, 0]);
  });
});

describe('a port another program already holds', () => {
  it('fails fast naming the port, and starts nothing', async () => {
    const foreign = http.createServer((_req, res) => res.end('{"ok":true}'));
    const port = await freePort();
    await new Promise<void>((resolve) => foreign.listen(port, '127.0.0.1', resolve));
    const otherDir = mkdtempSync(path.join(os.tmpdir(), 'conduit-suite-taken-'));
    try {
      // The foreign server answers the relay's readiness path; it must not pass for the relay.
      await expect(
        startSuite(otherDir, { relay: port, host: await freePort(), voice: await freePort() }),
      ).rejects.toThrow(new PortInUseError(port, 'relay'));
    } finally {
      foreign.close();
      rmSync(otherDir, { recursive: true, force: true });
    }
  });
});
