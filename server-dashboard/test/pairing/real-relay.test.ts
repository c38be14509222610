/**
 * Pairing, test pushes and unpairing against a real relay process (server-relay in APNs capture mode),
 * with the phone's side played through the relay's device API via the generated relay client.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { E2eEnvelope } from '@conduit/contracts/crypto/e2e';
import { createRelayClient } from '@conduit/sdk/relay';
import { readCredentials } from '../../src/credentials/credential-store.js';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { openNotification } from '../../src/crypto/e2e-device.js';
import { deriveE2eKeys } from '../../src/crypto/e2e-keys.js';
import { runPush, type PushCliDeps } from '../../src/pairing/cli.js';
import { provisionE2eKey } from '../../src/pairing/e2e-provisioning.js';
import { createRelayApi } from '../../src/pairing/relay-api.js';
import { RealRelay } from '../support/real-relay.js';

const TOPIC = 'dev.conduit.test';
let relayProcess: ChildProcess;
let relayUrl: string;
let dataDir: string;
let home: string;
let output: () => string = () => '';
const capturePath = () => join(dataDir, 'capture.jsonl');

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'conduit-real-relay-'));
  home = join(dataDir, 'hermes');
  // Real Hermes homes exist; --home refuses a missing one.
  await mkdir(home);
  await mkdir(join(dataDir, 'other'));
  const relay = await RealRelay.start(dataDir);
  relayUrl = relay.url;
  relayProcess = relay.child;
  output = () => relay.output;
});

afterAll(async () => {
  if (relayProcess && relayProcess.exitCode === null) {
    const exited = new Promise((r) => relayProcess.once('exit', r));
    relayProcess.kill('SIGTERM');
    await exited;
  }
  await rm(dataDir, { recursive: true, force: true });
});

/** The phone: registers an installation and mints a pairing code through the device API. */
async function phoneMintsCode(): Promise<{ installationId: string; code: string }> {
  const relay = createRelayClient({ baseUrl: relayUrl });
  const registered = await relay.POST('/v1/installations', {
    body: { bundle_id: TOPIC, device_token: randomBytes(32).toString('hex'), environment: 'production' },
  });
  if (!registered.data) throw new Error(`register failed: ${registered.response.status} ${output()}`);
  const installationId = registered.data.installation.id;
  const pairing = await relay.POST('/v1/installations/{id}/pairings', {
    params: { path: { id: installationId } },
    headers: { authorization: `Bearer ${registered.data.credential}` },
    body: {},
  });
  if (!pairing.data) throw new Error(`pairing failed: ${pairing.response.status}`);
  return { installationId, code: pairing.data.pairing_code };
}

const lines: string[] = [];
const deps = (): PushCliDeps => ({
  env: {},
  out: (line) => lines.push(line),
  err: (line) => lines.push(line),
  relay: createRelayApi({ userAgent: 'Conduit-Host/test' }),
  hostname: () => 'box',
  clock: Date.now,
  randomBytes: (n) => new Uint8Array(randomBytes(n)),
  identity: { version: '0.1.0', capabilities: ['version-reporting', 'e2e-v1'] },
});
const push = (...argv: string[]) => runPush([...argv, '--home', home], deps());

function captured(): Array<{ notification: Record<string, unknown> }> {
  if (!existsSync(capturePath())) return [];
  return readFileSync(capturePath(), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { notification: Record<string, unknown> });
}

/** Finds the sealed envelope inside a captured APNs payload, wherever the relay nests it. */
function envelopeOf(value: unknown): E2eEnvelope | null {
  if (typeof value !== 'object' || value === null) return null;
  if ('conduit_e2e' in value) return (value as { conduit_e2e: E2eEnvelope }).conduit_e2e;
  for (const inner of Object.values(value)) {
    const found = envelopeOf(inner);
    if (found) return found;
  }
  return null;
}

describe('against the real relay', () => {
  it('pairs with a code minted through the device API, sends sealed test pushes that open on the phone, and unpairs', async () => {
    const phone = await phoneMintsCode();
    expect(await push('pair', phone.code, '--relay-url', relayUrl)).toBe(0);
    expect(lines).toEqual(['Paired box Hermes with Conduit.']); // no hello warning: the relay took it
    const file = await readCredentials(home);
    expect(file).toMatchObject({ installation_id: phone.installationId, relay_url: relayUrl });

    // The same code cannot be claimed twice.
    lines.length = 0;
    expect(await runPush(['pair', phone.code, '--relay-url', relayUrl, '--home', join(dataDir, 'other')], deps())).toBe(
      1,
    );
    expect(lines).toEqual(['Conduit relay rejected the request: invalid_or_expired_pairing (404).']);

    // Plaintext test push first.
    lines.length = 0;
    expect(await push('test')).toBe(0);
    expect(lines).toEqual(['Test notification accepted by the Conduit relay.']);

    // The phone provisions its key over the dashboard connection; from now on everything is sealed.
    const secret = randomBytes(32);
    const kid = randomBytes(16).toString('hex');
    const provisioned = await provisionE2eKey(
      home,
      { installation_id: file?.installation_id, gateway_id: file?.gateway_id, kid, secret: encodeBase64Url(secret) },
      Date.now(),
    );
    expect(provisioned.ok).toBe(true);
    const before = captured().length;
    lines.length = 0;
    expect(await push('test')).toBe(0);
    expect(await push('test', '--corrupt')).toBe(0);
    expect(lines[1]).toMatch(/^Broken encrypted test notification accepted/);

    const pushes = captured().slice(before);
    expect(pushes).toHaveLength(2);
    const keys = deriveE2eKeys(kid, secret);
    const pairing = { installationId: file?.installation_id ?? '', gatewayId: file?.gateway_id ?? '' };
    const [good, broken] = pushes.map((p) => envelopeOf(p.notification));
    expect(good && openNotification(good, 'response.ready', keys, pairing, Math.floor(Date.now() / 1000))).toEqual({
      title: 'Hermes Conduit',
      body: 'Push notifications are connected.',
      profile: 'default',
    });
    expect(JSON.stringify(pushes[0])).not.toContain('Push notifications are connected');
    expect(
      broken && openNotification(broken, 'response.ready', keys, pairing, Math.floor(Date.now() / 1000)),
    ).toBeNull();

    // Unpair revokes the credential at the relay.
    lines.length = 0;
    expect(await push('unpair')).toBe(0);
    expect(lines).toEqual(['Conduit pairing revoked.']);
    const revoked = await createRelayApi({ userAgent: 'test' })
      .postEvent(relayUrl, file?.credential ?? '', { event_id: 'test:00000000', type: 'response.ready', body: 'x' })
      .catch((error: unknown) => error);
    expect(revoked).toMatchObject({ status: 401 });
  });
});
