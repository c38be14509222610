import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDashboardClient } from '@conduit/generated/dashboard/client';
import { hermesApiClient } from '../../src/cards/hermes-api.js';
import { TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';

/**
 * A fake Hermes API server (spec/hermes/SURFACES.md §1): bearer key, POST /v1/runs/{id}/approval
 * {choice, request_id?} → 200 for a run waiting on an approval, 404 {error:"run_not_found"} otherwise.
 */
class FakeHermesApi {
  readonly approvals: { runId: string; body: unknown; auth: string | undefined }[] = [];
  readonly waiting = new Set<string>();
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const match = /^\/v1\/runs\/([^/]+)\/approval$/.exec(req.url ?? '');
      if (req.headers.authorization !== 'Bearer hermes-key') return res.writeHead(401).end('{"error":"unauthorized"}');
      if (req.method !== 'POST' || !match?.[1]) return res.writeHead(404).end('{"error":"not_found"}');
      const runId = decodeURIComponent(match[1]);
      if (!this.waiting.has(runId)) return res.writeHead(404).end('{"error":"run_not_found"}');
      this.waiting.delete(runId);
      this.approvals.push({
        runId,
        body: JSON.parse(Buffer.concat(chunks).toString()),
        auth: req.headers.authorization,
      });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ run_id: runId, status: 'running' }));
    });
  });
  url = '';
  async start() {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  stop() {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(resolve));
  }
}

let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;
let hermes: FakeHermesApi;

beforeEach(async () => {
  home = tempHermesHome();
  relay = new FakeRelay();
  await relay.start();
  hermes = new FakeHermesApi();
  await hermes.start();
  writePairing(home.root, relay.url);
});
afterEach(async () => {
  await relay.stop();
  await hermes.stop();
  home.cleanup();
});

const approvalHook = (sessionKey: string, runId?: string) => ({
  hook_event_name: 'pre_approval_request',
  session_id: 's1',
  profile: 'default',
  extra: {
    session_key: sessionKey,
    description: 'rm -rf build',
    turn_id: 't1',
    command: 'rm -rf build',
    ...(runId ? { run_id: runId } : {}),
  },
});

async function host(withHermes = true) {
  const config = testConfig(home.root, withHermes ? { hermesApi: { url: hermes.url, key: 'hermes-key' } } : {});
  const started = await startHost(config);
  const client = createDashboardClient({ baseUrl: started.url, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
  return { ...started, client };
}

describe('answering approval cards from the phone', () => {
  it('reaches the Hermes API server run that waits on it, once', async () => {
    hermes.waiting.add('run_42');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('agent:main:s1', 'run_42'));
    const answered = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'agent:main:s1', choice: 'once' },
    });
    expect(answered.data).toEqual({ ok: true, choice: 'once', run_id: 'run_42' });
    expect(hermes.approvals).toEqual([{ runId: 'run_42', body: { choice: 'once' }, auth: 'Bearer hermes-key' }]);
    const again = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'agent:main:s1', choice: 'deny' },
    });
    expect([again.response.status, again.error]).toEqual([409, { error: 'already_answered' }]);
    await h.app.close();
  });

  it('an answer given natively first retires the card (409), and an unknown key is 404', async () => {
    hermes.waiting.add('run_1');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('k1', 'run_1'));
    await callHook(h.url, h.hookToken, {
      hook_event_name: 'post_approval_response',
      session_id: 's1',
      profile: 'default',
      extra: { session_key: 'k1', choice: 'deny' },
    });
    const late = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'k1', choice: 'once' },
    });
    const unknown = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'k9', choice: 'once' },
    });
    expect([late.response.status, unknown.response.status]).toEqual([409, 404]);
    expect(hermes.approvals).toEqual([]);
    await h.app.close();
  });

  it('the caller may name the run; without one it is 409 run_unknown; bad choices are 400; no API server is 501', async () => {
    hermes.waiting.add('run_7');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('k2'));
    const noRun = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'k2', choice: 'once' },
    });
    expect([noRun.response.status, noRun.error]).toEqual([409, { error: 'run_unknown' }]);
    const bad = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'k2', choice: 'maybe' as 'once' },
    });
    expect(bad.error).toEqual({ error: 'invalid_choice' });
    const named = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'k2', choice: 'session', run_id: 'run_7' },
    });
    expect(named.data).toEqual({ ok: true, choice: 'session', run_id: 'run_7' });
    await h.app.close();
    const without = await host(false);
    await callHook(without.url, without.hookToken, approvalHook('k3', 'run_8'));
    const unconfigured = await without.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'k3', choice: 'once' },
    });
    expect(unconfigured.response.status).toBe(501);
    await without.app.close();
  });

  it('maps Hermes failures: run_not_found 404, unreachable 502', async () => {
    const client = hermesApiClient({ url: hermes.url, key: 'hermes-key', timeoutMs: 2000 });
    expect(await client.answerApproval('gone', 'once', undefined)).toBe('run_not_found');
    const down = hermesApiClient({ url: 'http://127.0.0.1:9', key: 'k', timeoutMs: 2000 });
    expect(await down.answerApproval('r', 'once', 'req-1')).toBe('unreachable');
  });
});
