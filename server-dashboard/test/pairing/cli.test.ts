import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CredentialFile } from '../../src/credentials/credential-file.js';
import { credentialPath, readCredentials } from '../../src/credentials/credential-store.js';
import { encodeBase64Url } from '../../src/crypto/base64url.js';
import { openNotification } from '../../src/crypto/e2e-device.js';
import { deriveE2eKeys } from '../../src/crypto/e2e-keys.js';
import type { SealedEvent } from '@conduit/contracts/relay/events';
import { runPush, USAGE, type PushCliDeps } from '../../src/pairing/cli.js';
import { provisionE2eKey } from '../../src/pairing/e2e-provisioning.js';
import { createRelayApi } from '../../src/pairing/relay-api.js';
import { PairingRelay } from './support/pairing-relay.js';

let relay: PairingRelay;
let root: string;
let out: string[];
let err: string[];
const now = 1_770_000_000_000;

beforeAll(async () => {
  relay = new PairingRelay();
  await relay.start();
});
afterAll(() => relay.stop());
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'conduit-cli-'));
  out = [];
  err = [];
  relay.received.length = 0;
  relay.events.length = 0;
  relay.redirectTo = null;
});
afterEach(() => rm(root, { recursive: true, force: true }));

function deps(overrides: Partial<PushCliDeps> = {}): PushCliDeps {
  return {
    env: {},
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    relay: createRelayApi({ userAgent: 'Conduit-Host/test' }),
    hostname: () => 'box',
    clock: () => now,
    randomBytes: (n) => new Uint8Array(randomBytes(n)),
    identity: { version: '0.1.0', capabilities: ['version-reporting', 'e2e-v1'] },
    ...overrides,
  };
}

const push = (...argv: string[]) => runPush([...argv, '--home', root], deps());

async function pairHere(name?: string): Promise<CredentialFile> {
  const code = relay.mintCode();
  const argv = ['pair', code, '--relay-url', relay.url, ...(name ? ['--name', name] : [])];
  expect(await push(...argv)).toBe(0);
  const file = await readCredentials(root);
  if (!file) throw new Error('not paired');
  return file;
}

describe('conduit push pair', () => {
  it('claims the code with only the code and the gateway name, stores the credential 0600, and says hello', async () => {
    const code = relay.mintCode();
    expect(await push('pair', code.toLowerCase(), '--relay-url', `${relay.url}/`)).toBe(0);
    expect(out[0]).toBe('Paired box Hermes with Conduit.');
    const claim = relay.received.find((r) => r.path === '/v1/pairings/claim');
    expect(claim?.body).toEqual({ pairing_code: code, gateway_name: 'box Hermes' });
    expect(claim?.headers.authorization).toBeUndefined();
    expect(claim?.headers['user-agent']).toBe('Conduit-Host/test');

    const file = await readCredentials(root);
    expect(file).toMatchObject({
      gateway_name: 'box Hermes',
      installation_id: relay.installationId,
      relay_url: relay.url,
    });
    expect(file?.credential && relay.live.has(file.credential)).toBe(true);
    expect((await stat(credentialPath(root))).mode & 0o777).toBe(0o600);

    expect(relay.events).toEqual([
      {
        event_id: expect.stringMatching(/^hello:[0-9a-f]{32}$/),
        type: 'plugin.hello',
        plugin_version: '0.1.0',
        plugin_capabilities: ['version-reporting', 'e2e-v1'],
        profile: 'default',
      },
    ]);
  });

  it('uses --name, and a used or expired code fails with the relay error and writes nothing', async () => {
    const file = await pairHere('Studio Mac');
    expect(file.gateway_name).toBe('Studio Mac');
    await rm(credentialPath(root));
    const code = relay.mintCode();
    expect(await push('pair', code, '--relay-url', relay.url)).toBe(0);
    await rm(credentialPath(root));
    expect(await push('pair', code, '--relay-url', relay.url)).toBe(1);
    expect(err.at(-1)).toBe('Conduit relay rejected the request: invalid_or_expired_pairing (404).');
    expect(await readCredentials(root)).toBeNull();
  });

  it('refuses a malformed code or relay URL before any request', async () => {
    expect(await push('pair', 'NOT-A-CODE', '--relay-url', relay.url)).toBe(1);
    expect(await push('pair', relay.mintCode(), '--relay-url', `${relay.url}/v1?x=1`)).toBe(1);
    expect(await push('pair', relay.mintCode(), '--relay-url', 'ftp://relay.example')).toBe(1);
    expect(relay.received).toEqual([]);
    expect(err).toHaveLength(3);
  });

  it('never follows a redirect', async () => {
    const other = new PairingRelay();
    await other.start();
    try {
      relay.redirectTo = other.url;
      expect(await push('pair', relay.mintCode(), '--relay-url', relay.url)).toBe(1);
      expect(err.at(-1)).toMatch(/redirect \(307\); redirects are never followed/);
      expect(other.received).toEqual([]);
      expect(await readCredentials(root)).toBeNull();
    } finally {
      await other.stop();
    }
  });

  it('reports an unreachable relay', async () => {
    expect(await push('pair', relay.mintCode(), '--relay-url', 'http://127.0.0.1:1')).toBe(1);
    expect(err.at(-1)).toMatch(/^Could not reach the Conduit relay at http:\/\/127\.0\.0\.1:1/);
  });

  it('re-pairing keeps the redaction choice and drops an E2E key of another gateway', async () => {
    const first = await pairHere();
    expect(await push('redact', 'on')).toBe(0);
    const secret = randomBytes(32);
    const provisioned = await provisionE2eKey(
      root,
      {
        installation_id: first.installation_id,
        gateway_id: first.gateway_id,
        kid: 'c'.repeat(32),
        secret: encodeBase64Url(secret),
      },
      now,
    );
    expect(provisioned).toEqual({ ok: true, kid: 'c'.repeat(32) });
    const redactKey = (await readCredentials(root))?.redact_key;
    const second = await pairHere();
    expect(second.gateway_id).not.toBe(first.gateway_id);
    expect(second).toMatchObject({ redact_content: true, redact_key: redactKey });
    expect(second.e2e).toBeUndefined();
  });
});

describe('conduit push status', () => {
  it('says not paired with exit 1', async () => {
    expect(await push('status')).toBe(1);
    expect(out).toEqual(['This Hermes profile is not paired with Conduit.']);
  });

  it('prints name, relay, redaction, encryption and state, never the credential', async () => {
    const file = await pairHere();
    out = [];
    expect(await push('status')).toBe(0);
    expect(out).toEqual([
      'Paired: box Hermes',
      `Relay: ${relay.url}`,
      'Redact content: off',
      'End-to-end encryption: off (open Conduit > Settings > Notifications to turn it on)',
      `State: ${credentialPath(root)}`,
    ]);
    const kid = '0123456789abcdef0123456789abcdef';
    await provisionE2eKey(
      root,
      {
        installation_id: file.installation_id,
        gateway_id: file.gateway_id,
        kid,
        secret: encodeBase64Url(randomBytes(32)),
      },
      now,
    );
    await push('redact', 'on');
    out = [];
    expect(await push('status')).toBe(0);
    expect(out[2]).toBe('Redact content: on');
    expect(out[3]).toBe('End-to-end encryption: on (key 01234567\u2026)');
    const printed = out.join('\n');
    const stored = await readCredentials(root);
    expect(printed).not.toContain(stored?.credential?.split('.')[2]);
    expect(printed).not.toContain(stored?.redact_key);
  });
});

describe('conduit push status with an unusable key', () => {
  it('says encryption is broken rather than off, since events then go out without content', async () => {
    const file = await pairHere();
    await writeFile(credentialPath(root), JSON.stringify({ ...file, e2e: { kid: 'nope' } }));
    out = [];
    expect(await push('status')).toBe(0);
    expect(out[3]).toMatch(/^End-to-end encryption: broken \(the stored key can't be used/);
  });
});

describe('conduit push test', () => {
  it('sends the fixed test copy through the relay', async () => {
    const file = await pairHere();
    out = [];
    expect(await push('test')).toBe(0);
    expect(out).toEqual(['Test notification accepted by the Conduit relay.']);
    const event = relay.events.at(-1);
    expect(event).toMatchObject({
      type: 'response.ready',
      title: 'Hermes Conduit',
      body: 'Push notifications are connected.',
      profile: 'default',
    });
    expect(event?.event_id).toMatch(/^test:[0-9a-f-]{36}$/);
    const post = relay.received.at(-1);
    expect(post?.headers.authorization).toBe(`Bearer ${file.credential}`);
  });

  it('follows redact on at send time, and seals once the phone provisions a key', async () => {
    const file = await pairHere();
    await push('redact', 'on');
    expect(await push('test')).toBe(0);
    const redacted = relay.events.at(-1);
    expect(redacted).not.toHaveProperty('title');
    expect(redacted).not.toHaveProperty('body');
    expect(redacted?.event_id).toMatch(/^test:[0-9a-f]{32}$/);

    await push('redact', 'off');
    const secret = randomBytes(32);
    const kid = randomBytes(16).toString('hex');
    await provisionE2eKey(
      root,
      { installation_id: file.installation_id, gateway_id: file.gateway_id, kid, secret: encodeBase64Url(secret) },
      now,
    );
    expect(await push('test')).toBe(0);
    const sealed = relay.events.at(-1) as unknown as SealedEvent;
    expect(Object.keys(sealed).sort()).toEqual(['e2e', 'event_id', 'plugin_capabilities', 'plugin_version', 'type']);
    const inner = openNotification(
      sealed.e2e,
      sealed.type,
      deriveE2eKeys(kid, secret),
      { installationId: file.installation_id ?? '', gatewayId: file.gateway_id ?? '' },
      now / 1000,
    );
    expect(inner).toEqual({ title: 'Hermes Conduit', body: 'Push notifications are connected.', profile: 'default' });
  });

  it('--corrupt sends a well-formed envelope the phone cannot open, and needs E2E', async () => {
    const file = await pairHere();
    out = [];
    expect(await push('test', '--corrupt')).toBe(1);
    expect(out).toEqual(['End-to-end encryption is off for this profile; nothing to corrupt.']);
    const secret = randomBytes(32);
    const kid = randomBytes(16).toString('hex');
    await provisionE2eKey(
      root,
      { installation_id: file.installation_id, gateway_id: file.gateway_id, kid, secret: encodeBase64Url(secret) },
      now,
    );
    out = [];
    expect(await push('test', '--corrupt')).toBe(0);
    expect(out).toEqual([
      'Broken encrypted test notification accepted by the Conduit relay. The phone should show only generic text.',
    ]);
    const sealed = relay.events.at(-1) as unknown as SealedEvent;
    const pairing = { installationId: file.installation_id ?? '', gatewayId: file.gateway_id ?? '' };
    expect(openNotification(sealed.e2e, sealed.type, deriveE2eKeys(kid, secret), pairing, now / 1000)).toBeNull();
  });

  it('not paired: exit 1; a relay refusal: exit 1 with the error', async () => {
    expect(await push('test')).toBe(1);
    expect(out).toEqual(['This Hermes profile is not paired with Conduit.']);
    const file = await pairHere();
    relay.live.delete(file.credential ?? '');
    out = [];
    expect(await push('test')).toBe(1);
    expect(out).toEqual([
      'The Conduit relay did not accept the test notification: Conduit relay rejected the request: unauthorized (401).',
    ]);
  });

  it('refuses to send the credential over plain HTTP to another machine', async () => {
    const file = await pairHere();
    await writeFile(credentialPath(root), JSON.stringify({ ...file, relay_url: 'http://10.0.0.7:9120' }));
    relay.received.length = 0;
    out = [];
    expect(await push('test')).toBe(1);
    expect(out[0]).toMatch(/must use HTTPS \(plain HTTP only to this machine\)/);
    expect(relay.received).toEqual([]);
  });
});

describe('conduit push redact', () => {
  it('on mints the key once, off keeps it; not paired is exit 1; a bad mode is usage', async () => {
    expect(await push('redact', 'on')).toBe(1);
    await pairHere();
    out = [];
    expect(await push('redact', 'on')).toBe(0);
    const key = (await readCredentials(root))?.redact_key;
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(await push('redact', 'off')).toBe(0);
    expect(await push('redact', 'on')).toBe(0);
    expect(out).toEqual([
      'Notification content is redacted; approval and clarify cards use generic text.',
      'Notification content is no longer redacted.',
      'Notification content is redacted; approval and clarify cards use generic text.',
    ]);
    expect((await readCredentials(root))?.redact_key).toBe(key);
    expect(await push('redact', 'maybe')).toBe(2);
  });
});

describe('conduit push unpair', () => {
  it('revokes at the relay with the credential, then deletes the file', async () => {
    const file = await pairHere();
    out = [];
    expect(await push('unpair')).toBe(0);
    expect(out).toEqual(['Conduit pairing revoked.']);
    const revoke = relay.received.at(-1);
    expect(revoke).toMatchObject({ method: 'DELETE', path: '/v1/gateways/current' });
    expect(revoke?.headers.authorization).toBe(`Bearer ${file.credential}`);
    expect(relay.live.has(file.credential ?? '')).toBe(false);
    expect(await readCredentials(root)).toBeNull();
    out = [];
    expect(await push('unpair')).toBe(0);
    expect(out).toEqual(['This Hermes profile was not paired.']);
  });

  it('keeps the file when the relay cannot be reached', async () => {
    const file = await pairHere();
    await writeFile(credentialPath(root), JSON.stringify({ ...file, relay_url: 'http://127.0.0.1:1' }));
    expect(await push('unpair')).toBe(1);
    expect(await readCredentials(root)).toMatchObject({ credential: file.credential });
  });
});

describe('profiles and usage', () => {
  it('--profile NAME acts on <home>/profiles/NAME and refuses one that does not exist', async () => {
    expect(await push('status', '--profile', 'coder')).toBe(1);
    expect(err.at(-1)).toMatch(/profile "coder" does not exist/);
    await mkdir(join(root, 'profiles', 'coder'), { recursive: true });
    const code = relay.mintCode();
    expect(await push('pair', code, '--relay-url', relay.url, '-p', 'coder')).toBe(0);
    expect(await readCredentials(join(root, 'profiles', 'coder'))).not.toBeNull();
    expect(await readCredentials(root)).toBeNull();
    expect(relay.events.at(-1)).toMatchObject({ type: 'plugin.hello', profile: 'coder' });
  });

  it('HERMES_HOME (set by `hermes -p`) selects the profile home without flags', async () => {
    const home = join(root, 'profiles', 'ops');
    await mkdir(home, { recursive: true });
    const code = relay.mintCode();
    expect(await runPush(['pair', code, '--relay-url', relay.url], deps({ env: { HERMES_HOME: home } }))).toBe(0);
    expect(await readCredentials(home)).not.toBeNull();
    expect(relay.events.at(-1)).toMatchObject({ profile: 'ops' });
  });

  it('no subcommand or an unknown one prints usage and exits 2', async () => {
    expect(await push()).toBe(2);
    expect(await push('frobnicate')).toBe(2);
    expect(out).toEqual([USAGE, USAGE]);
  });

  it('a corrupt credential file is reported, not overwritten', async () => {
    await writeFile(credentialPath(root), '{oops');
    expect(await push('pair', relay.mintCode(), '--relay-url', relay.url)).toBe(1);
    expect(err.at(-1)).toMatch(/conduit-push\.json is unreadable \(not JSON\)/);
    expect(await readFile(credentialPath(root), 'utf8')).toBe('{oops');
    expect(relay.received).toEqual([]);
  });
});
