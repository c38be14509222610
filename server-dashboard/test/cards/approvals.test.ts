import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDashboardClient } from '@conduit/sdk/dashboard';
import { hermesApiClient } from '@conduit/contracts/hermes/api-client';
import type { Limits } from '../../src/limits.js';
import { TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { GATEWAY_ID, INSTALLATION_ID, writePairing } from '../support/pairing.js';
import { sealAnswer } from '../../src/crypto/e2e-answer.js';
import { deriveE2eKeys } from '../../src/crypto/e2e-keys.js';
import { openNotification } from '../../src/crypto/e2e-device.js';

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

async function host(withHermes = true, limits: Partial<Limits> = {}) {
  const config = testConfig(home.root, {
    limits,
    ...(withHermes ? { hermesApi: { url: hermes.url, key: 'hermes-key' } } : {}),
  });
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
    // An answer is never cached by a proxy or the app's URL cache (the contract declares these headers).
    expect(answered.response.headers.get('cache-control')).toBe('no-store');
    expect(answered.response.headers.get('pragma')).toBe('no-cache');
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

  it('the route answers 404 run_not_found when Hermes has no such run, and the card stays answerable', async () => {
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('k4', 'run_gone'));
    const missing = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'k4', choice: 'once' },
    });
    expect([missing.response.status, missing.error]).toEqual([404, { error: 'run_not_found' }]);
    hermes.waiting.add('run_gone');
    const retried = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'k4', choice: 'deny' },
    });
    expect(retried.data).toEqual({ ok: true, choice: 'deny', run_id: 'run_gone' });
    expect(hermes.approvals).toEqual([{ runId: 'run_gone', body: { choice: 'deny' }, auth: 'Bearer hermes-key' }]);
    await h.app.close();
  });

  it('maps Hermes failures: run_not_found 404, unreachable 502', async () => {
    const client = hermesApiClient({ url: hermes.url, key: 'hermes-key', timeoutMs: 2000 });
    expect(await client.answerApproval('gone', 'once', undefined)).toBe('run_not_found');
    const down = hermesApiClient({ url: 'http://127.0.0.1:9', key: 'k', timeoutMs: 2000 });
    expect(await down.answerApproval('r', 'once', 'req-1')).toBe('unreachable');
  });
});

/** The card's relay decision id, once the approval event has reached the relay. */
async function parkedDecision(sessionKey: string): Promise<string> {
  for (let i = 0; i < 300; i++) {
    for (const event of relay.events) {
      const body = event.body as {
        decision?: { session_key?: string; request_id?: string };
        clarify?: { request_id?: string };
        e2e?: unknown;
      };
      if (body.decision?.session_key === sessionKey && body.decision.request_id) return body.decision.request_id;
      if (body.e2e && body.clarify?.request_id) return body.clarify.request_id;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no approval card parked for ${sessionKey}`);
}

async function eventually<T>(what: string, probe: () => T | undefined | false): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const value = probe();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('approval cards answered through the relay', () => {
  it('the phone answer polled from the relay reaches the Hermes API server run; the host route then hears 409', async () => {
    hermes.waiting.add('run_r1');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('agent:main:r1', 'run_r1'));
    const id = await parkedDecision('agent:main:r1');
    expect(id).toMatch(/^conduit-approval-[A-Za-z0-9_-]+$/);
    relay.answer(id, 'once');
    await eventually('the approval in Hermes', () => hermes.approvals.length === 1);
    expect(hermes.approvals[0]).toMatchObject({ runId: 'run_r1', body: { choice: 'once' } });
    const late = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'agent:main:r1', choice: 'deny' },
    });
    expect([late.response.status, late.error]).toEqual([409, { error: 'already_answered' }]);
    expect(hermes.approvals).toHaveLength(1);
    await h.app.close();
  });

  it('Hermes aliases map to once; an answer that is no choice never reaches Hermes', async () => {
    hermes.waiting.add('run_a');
    hermes.waiting.add('run_b');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('ka', 'run_a'));
    relay.answer(await parkedDecision('ka'), 'Approve');
    await eventually('the aliased approval', () => hermes.approvals.length === 1);
    expect(hermes.approvals[0]).toMatchObject({ runId: 'run_a', body: { choice: 'once' } });
    await callHook(h.url, h.hookToken, {
      ...approvalHook('kb', 'run_b'),
      extra: { ...approvalHook('kb').extra, turn_id: 't2', run_id: 'run_b' },
    });
    relay.answer(await parkedDecision('kb'), 'sure, why not');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hermes.approvals).toHaveLength(1);
    // Still waiting: the host route can answer it.
    const routed = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'kb', choice: 'deny' },
    });
    expect(routed.data).toEqual({ ok: true, choice: 'deny', run_id: 'run_b' });
    await h.app.close();
  });

  it('a native answer first releases the parked decision, and Hermes hears nothing from the phone', async () => {
    hermes.waiting.add('run_n');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('kn', 'run_n'));
    const id = await parkedDecision('kn');
    await callHook(h.url, h.hookToken, {
      hook_event_name: 'post_approval_response',
      session_id: 's1',
      profile: 'default',
      extra: { session_key: 'kn', choice: 'once' },
    });
    await eventually('the release', () => relay.released.includes(id));
    expect(hermes.approvals).toEqual([]);
    await h.app.close();
  });

  it('an answer through the host route releases the parked card too', async () => {
    hermes.waiting.add('run_h');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('kh', 'run_h'));
    const id = await parkedDecision('kh');
    const routed = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'kh', choice: 'session' },
    });
    expect(routed.data).toEqual({ ok: true, choice: 'session', run_id: 'run_h' });
    await eventually('the release', () => relay.released.includes(id));
    await h.app.close();
  });

  it('a card the phone cannot show (deliverable false) is released at once; shutdown releases the rest', async () => {
    relay.deliverable = false;
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('ku', 'run_u'));
    const undeliverable = await parkedDecision('ku');
    await eventually('the release', () => relay.released.includes(undeliverable));
    relay.deliverable = true;
    await callHook(h.url, h.hookToken, {
      ...approvalHook('ks'),
      extra: { ...approvalHook('ks').extra, turn_id: 't3', run_id: 'run_s' },
    });
    const parked = await parkedDecision('ks');
    await h.app.close();
    expect(relay.released).toContain(parked);
  });

  it('a repeated hook parks no second card; a new approval in the session retires the old card', async () => {
    hermes.waiting.add('run_2');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('kr', 'run_1'));
    const first = await parkedDecision('kr');
    await callHook(h.url, h.hookToken, approvalHook('kr', 'run_1'));
    await callHook(h.url, h.hookToken, {
      ...approvalHook('kr', 'run_2'),
      extra: { ...approvalHook('kr', 'run_2').extra, turn_id: 't-next', command: 'make clean' },
    });
    await eventually('the old card released', () => relay.released.includes(first));
    const second = await eventually('the new card', () => [...relay.decisions.keys()].find((id) => id !== first));
    expect(relay.decisions.size).toBe(2);
    relay.answer(second, 'once');
    await eventually('the approval in Hermes', () => hermes.approvals.length === 1);
    expect(hermes.approvals[0]).toMatchObject({ runId: 'run_2', body: { choice: 'once' } });
    await h.app.close();
  });

  it('a card no relay answer could reach Hermes with (no run id, or no API server) is not parked', async () => {
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('no-run'));
    await eventually('the first card', () => relay.events.length === 1);
    await h.app.close();
    const without = await host(false);
    await callHook(without.url, without.hookToken, {
      ...approvalHook('no-api', 'run_x'),
      extra: { ...approvalHook('no-api', 'run_x').extra, turn_id: 't9' },
    });
    await eventually('the second card', () => relay.events.length === 2);
    await without.app.close();
    const cards = relay.events.map((e) => e.body.decision as { session_key: string; request_id?: string });
    expect(cards.map((c) => c.session_key)).toEqual(['no-run', 'no-api']);
    expect(cards.every((c) => c.request_id === undefined)).toBe(true);
    expect(relay.decisions.size).toBe(0);
  });

  it('with redact on, the card carries generic text and its request id, and stays answerable', async () => {
    writePairing(home.root, relay.url, { redact_content: true, redact_key: 'a'.repeat(64) });
    hermes.waiting.add('run_red');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('k-red', 'run_red'));
    const id = await parkedDecision('k-red');
    expect(relay.events.at(-1)?.body.decision).toEqual({
      kind: 'approval',
      description: 'Hermes needs your approval. Open Conduit for details.',
      session_key: 'k-red',
      choices: ['once', 'deny'],
      request_id: id,
    });
    relay.answer(id, 'once');
    await eventually('the approval in Hermes', () => hermes.approvals.length === 1);
    await h.app.close();
  });

  it('with E2E on, the card is parked through the sealed envelope and only a sealed answer is taken', async () => {
    const secret = Buffer.alloc(32, 7);
    const kid = 'ab12cd34'.repeat(4);
    writePairing(home.root, relay.url, {
      e2e: { kid, secret: secret.toString('base64url'), created_at: '2026-11-29T10:00:00Z' },
    });
    hermes.waiting.add('run_e1');
    hermes.waiting.add('run_e2');
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('ke1', 'run_e1'));
    const first = await parkedDecision('ke1');
    const sealed = relay.events.at(-1)?.body as { e2e: { req: string }; clarify: unknown; decision?: unknown };
    expect(sealed.e2e.req).toBe(first);
    expect(sealed.clarify).toEqual({ request_id: first, qids: [], card: true });
    expect(sealed.decision).toBeUndefined();
    relay.answer(first, 'once'); // plaintext: refused on an encrypted pairing
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hermes.approvals).toEqual([]);

    const events = relay.events.length;
    await callHook(h.url, h.hookToken, {
      ...approvalHook('ke2'),
      extra: { ...approvalHook('ke2').extra, turn_id: 't4', run_id: 'run_e2' },
    });
    await eventually('the second card', () => relay.events.length > events);
    const second = (relay.events.at(-1)?.body as { clarify: { request_id: string } }).clarify.request_id;
    const keys = deriveE2eKeys(kid, new Uint8Array(secret));
    const binding = { installationId: INSTALLATION_ID, gatewayId: GATEWAY_ID, requestId: second, questionId: '' };
    relay.answer(second, sealAnswer('deny', keys, binding, new Uint8Array(12).fill(3)));
    await eventually('the sealed approval in Hermes', () => hermes.approvals.length === 1);
    expect(hermes.approvals[0]).toMatchObject({ runId: 'run_e2', body: { choice: 'deny' } });
    await h.app.close();
  });
});

describe('approval cards when the relay has no room for another decision', () => {
  /** Retries an hour apart: a notification that waited in the retry queue would never arrive in time. */
  const slowRetries = { retryBaseMs: 3_600_000, retryMaxMs: 3_600_000 };
  type Posted = { event_id: string; title?: string; body?: string; decision?: Record<string, unknown> };
  const postsFor = (sessionKey: string) =>
    relay.events.map((e) => e.body as Posted).filter((body) => body.decision?.session_key === sessionKey);

  it('a 429 decision_capacity_exceeded sends the same notification at once without a request id, polls nothing, and the host route still answers', async () => {
    relay.maxActiveDecisions = 1;
    hermes.waiting.add('run_c2');
    const h = await host(true, slowRetries);
    await callHook(h.url, h.hookToken, approvalHook('kc1', 'run_c1'));
    const first = await parkedDecision('kc1');
    await callHook(h.url, h.hookToken, {
      ...approvalHook('kc2', 'run_c2'),
      extra: { ...approvalHook('kc2').extra, turn_id: 't-c2', run_id: 'run_c2', description: 'drop the cache' },
    });
    const [refused, plain] = await eventually('the plain approval', () => {
      const posts = postsFor('kc2');
      return posts.length === 2 ? posts : undefined;
    });
    expect(refused?.decision?.request_id).toMatch(/^conduit-approval-/);
    // Same event (the relay did not consume the id on this 429) and same copy; only the card's id is gone.
    const { request_id: _parked, ...plainDecision } = refused!.decision!;
    expect(plain).toEqual({ ...refused, decision: plainDecision });
    expect(plain?.decision).not.toHaveProperty('request_id');

    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(postsFor('kc2')).toHaveLength(2); // the parked card is not retried
    expect([...relay.decisions.keys()]).toEqual([first]);
    expect(relay.polled).not.toContain(refused?.decision?.request_id);

    const routed = await h.client.POST('/api/plugins/conduit_push/approvals/respond', {
      body: { session_key: 'kc2', choice: 'deny' },
    });
    expect(routed.data).toEqual({ ok: true, choice: 'deny', run_id: 'run_c2' });
    expect(hermes.approvals).toEqual([{ runId: 'run_c2', body: { choice: 'deny' }, auth: 'Bearer hermes-key' }]);
    await h.app.close();
  });

  it('with redact on, the plain approval keeps the generic copy and names no request id', async () => {
    writePairing(home.root, relay.url, { redact_content: true, redact_key: 'a'.repeat(64) });
    relay.maxActiveDecisions = 0;
    const h = await host(true, slowRetries);
    await callHook(h.url, h.hookToken, approvalHook('kc-red', 'run_red'));
    const [refused, plain] = await eventually('the plain approval', () => {
      const posts = postsFor('kc-red');
      return posts.length === 2 ? posts : undefined;
    });
    expect(refused?.decision?.request_id).toMatch(/^conduit-approval-/);
    expect(plain?.event_id).toBe(refused?.event_id);
    expect(plain?.decision).toEqual({
      kind: 'approval',
      description: 'Hermes needs your approval. Open Conduit for details.',
      session_key: 'kc-red',
      choices: ['once', 'deny'],
    });
    expect(JSON.stringify(plain)).not.toContain('rm -rf');
    await h.app.close();
  });

  it('with E2E on, the plain approval is sealed with no req and no parking descriptor, and opens without a request id', async () => {
    const secret = Buffer.alloc(32, 5);
    const kid = 'cd34ef56'.repeat(4);
    writePairing(home.root, relay.url, {
      e2e: { kid, secret: secret.toString('base64url'), created_at: '2026-11-29T10:00:00Z' },
    });
    relay.maxActiveDecisions = 0;
    const h = await host(true, slowRetries);
    await callHook(h.url, h.hookToken, approvalHook('kc-e2e', 'run_e2e'));
    type Sealed = { event_id: string; e2e: Parameters<typeof openNotification>[0]; clarify?: unknown };
    const [refused, plain] = await eventually('the sealed plain approval', () =>
      relay.events.length === 2 ? relay.events.map((e) => e.body as unknown as Sealed) : undefined,
    );
    expect(refused?.e2e.req).toMatch(/^conduit-approval-/);
    expect(refused?.clarify).toMatchObject({ request_id: refused?.e2e.req });
    expect(plain?.event_id).toBe(refused?.event_id);
    expect(plain?.e2e.req).toBe('');
    expect(plain?.clarify).toBeUndefined();
    const opened = openNotification(
      plain!.e2e,
      'approval.needed',
      deriveE2eKeys(kid, new Uint8Array(secret)),
      { installationId: INSTALLATION_ID, gatewayId: GATEWAY_ID },
      Math.floor(Date.now() / 1000),
    );
    expect(opened).toMatchObject({
      body: 'rm -rf build',
      decision: { kind: 'approval', session_key: 'kc-e2e', description: 'rm -rf build' },
    });
    expect((opened?.decision as Record<string, unknown>).request_id).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(relay.events).toHaveLength(2);
    await h.app.close();
  });
});

describe('approval cards retired while their post is in flight', () => {
  const nativeAnswer = (sessionKey: string) => ({
    hook_event_name: 'post_approval_response',
    session_id: 's1',
    profile: 'default',
    extra: { session_key: sessionKey, choice: 'once' },
  });

  it('a card the relay took after it was retired is released', async () => {
    relay.delayMs = 400;
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('kf', 'run_f'));
    await callHook(h.url, h.hookToken, nativeAnswer('kf'));
    const id = await parkedDecision('kf');
    await eventually('the release', () => relay.released.includes(id));
    expect(hermes.approvals).toEqual([]);
    await h.app.close();
  });

  it('a card refused for decision capacity after it was retired is neither retried nor sent plainly', async () => {
    relay.delayMs = 400;
    relay.maxActiveDecisions = 0;
    const h = await host();
    await callHook(h.url, h.hookToken, approvalHook('kg', 'run_g'));
    await callHook(h.url, h.hookToken, nativeAnswer('kg'));
    await eventually('the refused post', () => relay.events.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 600)); // retries are 5-20 ms apart in tests
    expect(relay.events).toHaveLength(1);
    expect(h.queue.size).toBe(0);
    await h.app.close();
  });
});
