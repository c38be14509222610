/**
 * The confirm prompt's nudge against a real relay process (server-relay in APNs capture mode): a
 * conduit_present confirm posts a phone.changes event with event id present:<id> that the relay
 * accepts and pushes as an alert. With end-to-end encryption on, the push carries only the sealed
 * envelope (opened here with node:crypto, apart from the host's code) and the relay's generic copy;
 * without it, the plain event is taken as it is.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RealRelay } from '../support/real-relay.js';
import type { Host } from '../../src/app.js';
import { systemClock } from '../../src/clock.js';
import { readCredentials } from '../../src/credentials/credential-store.js';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { httpRelayGateway } from '../../src/delivery/relay-gateway.js';
import { presentFeature, relayPresentNudge } from '../../src/features/present/index.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { runPush, type PushCliDeps } from '../../src/pairing/cli.js';
import { provisionE2eKey } from '../../src/pairing/e2e-provisioning.js';
import { createRelayApi } from '../../src/pairing/relay-api.js';
import { nodeKeyedId, nodeKeys, nodeOpen, type NodeEnvelope } from '../crypto/independent-e2e.js';
import { TEST_TOKEN, testConfig } from '../support/config.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { connectMcp } from '../support/mcp-client.js';

const TOPIC = 'dev.conduit.test';
let relayProcess: ChildProcess;
let relayUrl: string;
let dataDir: string;
let root: string;
let host: Host & { url: string };
let mcpToken: string;
let output: () => string = () => '';
const capturePath = () => join(dataDir, 'capture.jsonl');

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'conduit-present-relay-'));
  root = join(dataDir, 'hermes');
  await mkdir(join(root, 'profiles', 'work'), { recursive: true });
  const relay = await RealRelay.start(dataDir);
  relayUrl = relay.url;
  relayProcess = relay.child;
  output = () => relay.output;
  const nudge = relayPresentNudge({
    gateway: httpRelayGateway({ userAgent: 'Conduit-Host/test', timeoutMs: 10_000 }),
    clock: systemClock,
    pluginVersion: '0.1.0',
  });
  host = await startHost(testConfig(root), { features: [presentFeature({ nudge })] });
  mcpToken = await readOrCreateMcpToken(join(root, 'conduit-host'));
});

afterAll(async () => {
  await host?.app.close();
  if (relayProcess && relayProcess.exitCode === null) {
    const exited = new Promise((done) => relayProcess.once('exit', done));
    relayProcess.kill('SIGTERM');
    await exited;
  }
  await rm(dataDir, { recursive: true, force: true });
});

/** The phone's side through the relay's device API (plain fetch: the wire as API.md states it). */
async function relayCall(method: string, route: string, body: unknown, bearer?: string) {
  const response = await fetch(`${relayUrl}${route}`, {
    method,
    headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function captured(): { deviceToken: string; notification: Record<string, unknown> }[] {
  if (!existsSync(capturePath())) return [];
  return readFileSync(capturePath(), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { deviceToken: string; notification: Record<string, unknown> });
}

const cliDeps = (): PushCliDeps => ({
  env: {},
  out: () => undefined,
  err: () => undefined,
  relay: createRelayApi({ userAgent: 'Conduit-Host/test' }),
  hostname: () => 'box',
  clock: Date.now,
  randomBytes: (n) => new Uint8Array(randomBytes(n)),
  identity: { version: '0.1.0', capabilities: ['version-reporting', 'e2e-v1'] },
});

/** A phone registered with the relay, and `home` paired with it as `conduit push pair` does. */
async function pairPhone(home: string): Promise<void> {
  const registered = await relayCall('POST', '/v1/installations', {
    bundle_id: TOPIC,
    device_token: randomBytes(32).toString('hex'),
    environment: 'production',
  });
  if (registered.status !== 201 && registered.status !== 200) throw new Error(`register: ${output()}`);
  const installation = registered.body.installation as { id: string };
  const pairing = await relayCall(
    'POST',
    `/v1/installations/${installation.id}/pairings`,
    {},
    registered.body.credential as string,
  );
  expect(
    await runPush(['pair', String(pairing.body.pairing_code), '--relay-url', relayUrl, '--home', home], cliDeps()),
  ).toBe(0);
}

/** Conduit's first exchange, which makes the tool visible to the profile. */
async function exchange(profile: string) {
  const response = await fetch(`${host.url}/api/plugins/conduit_push/present/exchange?profile=${profile}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_TOKEN}` },
    body: JSON.stringify({ installation_id: 'inst', device: 'iPhone', app_version: '1', features: ['present-v1'] }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { prompts: { id: string; title: string }[] };
}

async function confirm(profile: string, title: string): Promise<{ id: string; phone_notified: boolean }> {
  const args = { action: 'confirm', title, preview: 'Delete **3 photos**', action_label: 'Delete' };
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile,
    session_id: 'chat-relay',
    tool_name: 'mcp_conduit_conduit_present',
    tool_input: args,
    extra: { turn_id: 't-relay', tool_call_id: 'tc-relay' },
  });
  const client = await connectMcp(host.url, mcpToken, profile);
  try {
    const result = await client.callTool({
      name: 'conduit_present',
      arguments: (hooked.answer as { args: Record<string, unknown> }).args,
    });
    const body = JSON.parse((result.content as { text: string }[])[0]?.text ?? '{}') as {
      prompt: { id: string };
      phone_notified: boolean;
    };
    return { id: body.prompt.id, phone_notified: body.phone_notified };
  } finally {
    await client.close();
  }
}

describe('the present nudge through the real relay', () => {
  it('is sealed end to end when the pairing has a key: the relay sees only the envelope', async () => {
    await pairPhone(root);
    const file = await readCredentials(root);
    const secret = randomBytes(32);
    const provisioned = await provisionE2eKey(
      root,
      {
        installation_id: file?.installation_id,
        gateway_id: file?.gateway_id,
        kid: randomBytes(16).toString('hex'),
        secret: encodeBase64Url(secret),
      },
      Date.now(),
    );
    expect(provisioned.ok).toBe(true);
    await exchange('default');

    const before = captured().length;
    const title = 'Delete the holiday photos';
    const sent = await confirm('default', title);
    expect(sent.phone_notified).toBe(true);
    const pushes = captured().slice(before);
    expect(pushes).toHaveLength(1);
    const notification = pushes[0]?.notification as { payload: Record<string, unknown> };
    expect(notification.payload).toMatchObject({
      aps: { alert: { title: 'Change to review' }, 'mutable-content': 1 },
      conduit: { type: 'phone.changes', mode: 'alert', e2e: 1 },
    });
    expect(JSON.stringify(pushes)).not.toContain(title);
    expect(JSON.stringify(pushes)).not.toContain(sent.id);
    const envelope = notification.payload.conduit_e2e as NodeEnvelope;
    const keys = nodeKeys(secret);
    // The event id the host sealed under is present:<id>, keyed so the relay cannot read it.
    expect(envelope.msg).toBe(nodeKeyedId(keys.meta, `present:${sent.id}`));
    const inner = nodeOpen(envelope, 'phone.changes', file?.installation_id ?? '', file?.gateway_id ?? '', keys.push);
    expect(inner).toEqual({
      title,
      body: 'Hermes asks you to confirm: Delete',
      session_id: 'chat-relay',
      profile: 'default',
    });
    expect((await exchange('default')).prompts.map((prompt) => prompt.id)).toContain(sent.id);
  });

  it('goes as a plain phone.changes alert when the pairing has no key', async () => {
    const work = join(root, 'profiles', 'work');
    await pairPhone(work);
    await exchange('work');
    const before = captured().length;
    const sent = await confirm('work', 'Book the table');
    expect(sent.phone_notified).toBe(true);
    const pushes = captured().slice(before);
    expect(pushes).toHaveLength(1);
    expect(pushes[0]?.notification.payload).toMatchObject({
      conduit: { type: 'phone.changes', mode: 'alert', session_id: 'chat-relay', profile: 'work' },
    });
  });
});
