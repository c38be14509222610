/**
 * The confirm prompt's nudge against a real relay process (server-relay in APNs capture mode): a
 * conduit_present confirm posts a phone.changes event with event id present:<id> that the relay
 * accepts and pushes as an alert. With end-to-end encryption on, the push carries only the sealed
 * envelope (opened here with node:crypto, apart from the host's code) and the relay's generic copy;
 * without it, the plain event is taken as it is.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RealRelay } from '../support/real-relay.js';
import type { Host } from '../../src/app.js';
import { systemClock } from '../../src/clock.js';
import { httpRelayGateway } from '../../src/delivery/relay-gateway.js';
import { presentFeature, relayPresentNudge } from '../../src/features/present/index.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { nodeKeyedId, nodeKeys, nodeOpen, type NodeEnvelope } from '../crypto/independent-e2e.js';
import { TEST_TOKEN, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { callToolAsHermes } from '../support/mcp-client.js';
import { provisionPushKey } from '../support/pairing.js';

let relay: RealRelay;
let dataDir: string;
let root: string;
let host: Host & { url: string };
let mcpToken: string;
const capturePath = () => join(dataDir, 'capture.jsonl');

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'conduit-present-relay-'));
  root = join(dataDir, 'hermes');
  await mkdir(join(root, 'profiles', 'work'), { recursive: true });
  relay = await RealRelay.start(dataDir);
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
  await relay?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

function captured(): { deviceToken: string; notification: Record<string, unknown> }[] {
  if (!existsSync(capturePath())) return [];
  return readFileSync(capturePath(), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { deviceToken: string; notification: Record<string, unknown> });
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
  const from = { profile, session: 'chat-relay', turn: 't-relay', toolCall: 'tc-relay' };
  const { text } = await callToolAsHermes(host, mcpToken, 'conduit_present', args, from);
  const body = JSON.parse(text) as { prompt: { id: string }; phone_notified: boolean };
  return { id: body.prompt.id, phone_notified: body.phone_notified };
}

describe('the present nudge through the real relay', () => {
  it('is sealed end to end when the pairing has a key: the relay sees only the envelope', async () => {
    await relay.pair(root);
    const { installationId, gatewayId, secret } = await provisionPushKey(root);
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
    const inner = nodeOpen(envelope, 'phone.changes', installationId, gatewayId, keys.push);
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
    await relay.pair(work);
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
