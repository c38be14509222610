/**
 * locate against a real relay process (server-relay in APNs capture mode) and a real host: the sealed
 * location.request the host builds is one the relay accepts, pushes to the phone's location push token
 * as an Apple location push, and that the phone opens (checked with node:crypto, apart from the host's
 * code). Before the phone registers a location push token the relay answers 409, which the port
 * reports as such. Then the whole path: conduit_location's locate through the MCP client, the push
 * captured, and a phone stand-in answering it with a sealed batch that ends the tool's wait.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, watch } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locationRequestInner } from '@conduit/contracts/dashboard/location';
import { RealRelay } from '../support/real-relay.js';
import { systemClock } from '../../src/clock.js';
import { readCredentials } from '../../src/credentials/credential-store.js';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { httpRelayGateway } from '../../src/delivery/relay-gateway.js';
import { LOCATION_LABEL } from '@conduit/contracts/dashboard/location';
import type { Host } from '../../src/app.js';
import { locationFeature, relayLocationPush } from '../../src/features/location/index.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { testConfig } from '../support/config.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { connectMcp } from '../support/mcp-client.js';
import { PhoneStandIn } from '../support/phone-stand-in.js';
import { runPush, type PushCliDeps } from '../../src/pairing/cli.js';
import { provisionE2eKey } from '../../src/pairing/e2e-provisioning.js';
import { createRelayApi } from '../../src/pairing/relay-api.js';
import { nodeKeys, nodeOpen, type NodeEnvelope } from '../crypto/independent-e2e.js';

const TOPIC = 'dev.conduit.test';
let relayProcess: ChildProcess;
let relayUrl: string;
let dataDir: string;
let home: string;
let output: () => string = () => '';
const capturePath = () => join(dataDir, 'capture.jsonl');
let host: (Host & { url: string }) | undefined;
let e2eSecret: Buffer;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'conduit-location-relay-'));
  home = join(dataDir, 'hermes');
  await mkdir(home);
  const relay = await RealRelay.start(dataDir);
  relayUrl = relay.url;
  relayProcess = relay.child;
  output = () => relay.output;
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

/** Resolves once the capture file holds more than `count` pushes (watched, not polled). */
function capturedMoreThan(count: number): Promise<void> {
  return new Promise((done) => {
    const watcher = watch(dataDir, () => {
      if (captured().length > count) {
        watcher.close();
        done();
      }
    });
    if (captured().length > count) {
      watcher.close();
      done();
    }
  });
}

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

describe('locate through the real relay', () => {
  it('is refused 409 until the phone registers a location push token, then pushed sealed to that token', async () => {
    const registered = await relayCall('POST', '/v1/installations', {
      bundle_id: TOPIC,
      device_token: randomBytes(32).toString('hex'),
      environment: 'production',
    });
    if (registered.status !== 201 && registered.status !== 200) throw new Error(`register: ${output()}`);
    const installation = registered.body.installation as { id: string };
    const deviceCredential = registered.body.credential as string;
    const pairing = await relayCall('POST', `/v1/installations/${installation.id}/pairings`, {}, deviceCredential);
    expect(
      await runPush(['pair', String(pairing.body.pairing_code), '--relay-url', relayUrl, '--home', home], cliDeps()),
    ).toBe(0);
    const file = await readCredentials(home);
    const secret = randomBytes(32);
    e2eSecret = secret;
    const kid = randomBytes(16).toString('hex');
    const provisioned = await provisionE2eKey(
      home,
      { installation_id: file?.installation_id, gateway_id: file?.gateway_id, kid, secret: encodeBase64Url(secret) },
      Date.now(),
    );
    expect(provisioned.ok).toBe(true);

    const port = relayLocationPush({
      gateway: httpRelayGateway({ userAgent: 'Conduit-Host/test', timeoutMs: 10_000 }),
      clock: systemClock,
      pluginVersion: '0.1.0',
    });
    const profile = { name: 'default', home };
    expect(await port.requestLocation(profile, { kind: 'locate', requestId: 'locate-request-0001' })).toEqual({
      kind: 'no_location_push',
    });

    const locationToken = randomBytes(32).toString('hex');
    const updated = await relayCall(
      'PUT',
      `/v1/installations/${installation.id}`,
      { location_push_token: locationToken },
      deviceCredential,
    );
    expect(updated.status).toBe(200);
    const before = captured().length;
    expect(await port.requestLocation(profile, { kind: 'locate', requestId: 'locate-request-0002' })).toEqual({
      kind: 'sent',
      delivered: true,
    });
    const pushes = captured().slice(before);
    expect(pushes).toHaveLength(1);
    const [pushed] = pushes;
    expect(pushed?.deviceToken).toBe(locationToken);
    expect(pushed?.notification).toMatchObject({ pushType: 'location', topic: `${TOPIC}.location-query` });
    expect(JSON.stringify(pushed)).not.toContain('locate-request-0002');
    const payload = pushed?.notification.payload as { conduit_e2e: NodeEnvelope };
    const inner = nodeOpen(
      payload.conduit_e2e,
      'location.request',
      file?.installation_id ?? '',
      file?.gateway_id ?? '',
      nodeKeys(secret).push,
    );
    expect(locationRequestInner.parse(inner)).toEqual({
      profile: 'default',
      location: { v: 1, kind: 'locate', request_id: 'locate-request-0002' },
    });
  });

  it('locate through the MCP tool wakes the phone, whose sealed batch ends the wait with a fresh fix', async () => {
    host = await startHost(testConfig(home), { features: [locationFeature()] });
    const phone = new PhoneStandIn(host.url, 'location', LOCATION_LABEL, 'iphone-real');
    expect((await phone.agree()).status).toBe(200);
    const sharing = {
      foreground: true,
      background: true,
      paused: false,
      retention_days: 7,
      precision: { foreground: 'precise', background: 'area' },
      features: [],
    };
    const fixAt = (id: string, place: string) => ({
      id,
      at: Date.now() / 1000,
      layer: 'background',
      kind: 'fix',
      area: { locality: place },
    });
    expect((await phone.send({ v: 1, sharing, fixes: [fixAt('old', 'Hackney')] })).status).toBe(200);

    const hooked = await callHook(host.url, host.hookToken, {
      hook_event_name: 'pre_tool_call',
      profile: 'default',
      session_id: 'real-chat',
      tool_name: 'mcp_conduit_conduit_location',
      tool_input: { action: 'locate' },
      extra: { turn_id: 't-1', tool_call_id: 'tc-1' },
    });
    const client = await connectMcp(host.url, await readOrCreateMcpToken(join(home, 'conduit-host')));
    const before = captured().length;
    const pushed = capturedMoreThan(before);
    const call = client.callTool({
      name: 'conduit_location',
      arguments: (hooked.answer as { args: Record<string, unknown> }).args,
    });
    await pushed;
    // The phone's extension opens the push and answers with its next sealed batch.
    const payload = captured().at(-1)?.notification.payload as { conduit_e2e: NodeEnvelope };
    const file = await readCredentials(home);
    const inner = locationRequestInner.parse(
      nodeOpen(
        payload.conduit_e2e,
        'location.request',
        file?.installation_id ?? '',
        file?.gateway_id ?? '',
        nodeKeys(e2eSecret).push,
      ),
    );
    expect(inner.location.kind).toBe('locate');
    expect((await phone.send({ v: 1, sharing, fixes: [fixAt('fresh', 'Shoreditch')] })).status).toBe(200);
    const result = await call;
    await client.close();
    const text = (result.content as { text: string }[])[0]?.text ?? '';
    expect(JSON.parse(text)).toMatchObject({ ok: true, fresh: true, fix: { where: 'in Shoreditch' } });
  });
});
