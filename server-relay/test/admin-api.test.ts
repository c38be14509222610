/**
 * The relay admin API (tRPC at /admin/trpc): a real relay on an ephemeral port over real SQLite and
 * PostgreSQL, driven by a real @trpc/client. Absent without ADMIN_TOKEN (the relay's own 404), refused
 * without or with a wrong bearer, and its lookups never carry a secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayAdminProcedures } from '@conduit/contracts/relay/admin';
import { relayAdminRouter, type RelayAdminRouter } from '../src/admin/admin-router.js';
import { LIMIT_TABLE } from '../src/limits.js';
import {
  paired,
  register,
  ROOMY_BUDGETS,
  startRelay,
  STORE_KINDS,
  testDatabase,
  type Relay,
} from './support/harness.js';

const ADMIN_TOKEN = 'a'.repeat(24) + 'admin-token-for-tests';
const DAY_MS = 24 * 60 * 60 * 1000;

function adminClient(baseUrl: string, token: string | null) {
  return createTRPCClient<RelayAdminRouter>({
    links: [
      httpLink({
        url: `${baseUrl}/admin/trpc`,
        headers: () => (token === null ? {} : { authorization: `Bearer ${token}` }),
      }),
    ],
  });
}

async function refusal(call: Promise<unknown>): Promise<number | undefined> {
  const error: unknown = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCClientError);
  const data = (error as TRPCClientError<RelayAdminRouter>).data as { httpStatus?: number } | undefined;
  const meta = (error as TRPCClientError<RelayAdminRouter>).meta as { response?: Response } | undefined;
  return data?.httpStatus ?? meta?.response?.status;
}

it('every procedure is built from its contract: the same input and output schemas', () => {
  const router = relayAdminRouter({} as Parameters<typeof relayAdminRouter>[0]);
  const procedures = router._def.procedures as Record<
    string,
    { _def: { inputs: unknown[]; output?: unknown; type: string } }
  >;
  expect(Object.keys(procedures).sort()).toEqual(Object.keys(relayAdminProcedures).sort());
  for (const [name, contract] of Object.entries(relayAdminProcedures)) {
    const def = procedures[name]?._def;
    expect(def?.inputs).toEqual([contract.input]);
    expect(def?.output).toBe(contract.output);
    expect(def?.type).toBe(contract.kind);
  }
});

describe('without ADMIN_TOKEN', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  let relay: Relay;
  beforeAll(async () => {
    db = await testDatabase('sqlite');
    relay = await startRelay(db.url);
  });
  afterAll(async () => {
    await relay.close();
    await db.release();
  });

  it('the prefix answers as an unknown route: 404 not_found, with or without a bearer', async () => {
    for (const target of ['/admin/trpc/storageStatus', '/admin/trpc/limits?input=%7B%7D', '/admin/trpc']) {
      for (const headers of [{}, { authorization: `Bearer ${ADMIN_TOKEN}` }] as Record<string, string>[]) {
        const response = await fetch(`${relay.baseUrl}${target}`, { headers });
        expect(response.status).toBe(404);
        expect(await response.json()).toEqual({ error: 'not_found' });
      }
    }
    const mutation = await fetch(`${relay.baseUrl}/admin/trpc/revokeInstallation`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: '{"installationId":"x"}',
    });
    expect(mutation.status).toBe(404);
    expect(await mutation.json()).toEqual({ error: 'not_found' });
  });
});

describe.each(STORE_KINDS)('with ADMIN_TOKEN (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  let relay: Relay;
  let dataDir: string;
  beforeAll(async () => {
    db = await testDatabase(kind);
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'relay-admin-'));
    relay = await startRelay(db.url, {
      ...ROOMY_BUDGETS,
      ADMIN_TOKEN,
      TRUST_PROXY: '1',
      RELAY_MAX_GATEWAYS_PER_INSTALLATION: '7',
      DATA_PATH: path.join(dataDir, 'relay.sqlite'),
    });
  }, 120_000);
  afterAll(async () => {
    await relay?.close();
    await db?.release();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses every procedure without the bearer and with a wrong one (401), before any work', async () => {
    for (const token of [null, 'b'.repeat(45), `${ADMIN_TOKEN}x`, '']) {
      const admin = adminClient(relay.baseUrl, token);
      const calls: (() => Promise<unknown>)[] = [
        () => admin.storageStatus.query(),
        () => admin.prunePreview.query(),
        () => admin.pruneApply.mutate({ expectEligible: 0 }),
        () => admin.installation.query({ installationId: 'x' }),
        () => admin.gateway.query({ installationId: 'x', gatewayId: 'y' }),
        () => admin.revokeInstallation.mutate({ installationId: 'x' }),
        () => admin.revokeGateway.mutate({ installationId: 'x', gatewayId: 'y' }),
        () => admin.limits.query(),
      ];
      for (const call of calls) expect(await refusal(call())).toBe(401);
    }
    const raw = await fetch(`${relay.baseUrl}/admin/trpc/storageStatus`, { headers: { authorization: 'Basic x' } });
    expect(raw.status).toBe(401);
    expect(await raw.json()).toEqual({ error: 'unauthorized' });
  });

  it('storage status, installation and gateway lookup, revocation, prune preview then apply', async () => {
    const admin = adminClient(relay.baseUrl, ADMIN_TOKEN);
    const before = await admin.storageStatus.query();
    const phone = await paired(relay, { voip_token: 'cd'.repeat(32) });
    const loner = await register(relay);
    const status = await admin.storageStatus.query();
    expect(status.installations.total).toBe(before.installations.total + 2);
    expect(status.installations.active).toBe(before.installations.active + 2);
    expect(status.installations.capacity).toBe(50_000);

    const installation = await admin.installation.query({ installationId: phone.phone.id });
    expect(installation).toMatchObject({
      id: phone.phone.id,
      active: true,
      tokens: { voip: true, watchVoip: false, locationPush: false },
      gatewayCount: 1,
      gateways: [{ id: phone.gatewayId, name: 'Test host', installationId: phone.phone.id }],
    });
    const gateway = await admin.gateway.query({ installationId: phone.phone.id, gatewayId: phone.gatewayId });
    expect(gateway.id).toBe(phone.gatewayId);
    // No secret in what the API serialises: not the credentials, their hashes, or the APNs tokens.
    const stored = await relay.store.findInstallation(phone.phone.id);
    const storedGateway = await relay.store.findGateway(phone.phone.id, phone.gatewayId);
    const serialised = JSON.stringify([
      installation,
      gateway,
      await admin.installation.query({ installationId: loner.id }),
    ]);
    // Credentials are `<ids>.<secret>`: the ids are what a lookup is for, the last part is the secret.
    const secretOf = (credential: string) => credential.split('.').at(-1) ?? '';
    const secrets = [
      secretOf(phone.phone.credential),
      secretOf(phone.gatewayAuth.authorization),
      secretOf(loner.credential),
      phone.phone.token,
      loner.token,
      'cd'.repeat(32),
      stored?.deviceSecretHash ?? '',
      storedGateway?.secretHash ?? '',
    ];
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThanOrEqual(32);
      expect(serialised).not.toContain(secret);
    }

    expect(await refusal(admin.installation.query({ installationId: 'nope' }))).toBe(404);
    expect(await refusal(admin.gateway.query({ installationId: phone.phone.id, gatewayId: 'nope' }))).toBe(404);

    // Revoking the gateway: its credential stops working at once (the route cache is written through).
    expect(await admin.revokeGateway.mutate({ installationId: phone.phone.id, gatewayId: phone.gatewayId })).toEqual({
      revoked: true,
    });
    const meta = await relay.client.GET('/v1/meta', { headers: phone.gatewayAuth });
    expect(meta.response.status).toBe(401);
    // Revoking the installation: its device credential stops working.
    expect(await admin.revokeInstallation.mutate({ installationId: phone.phone.id })).toEqual({ revoked: true });
    expect(await admin.revokeInstallation.mutate({ installationId: phone.phone.id })).toEqual({ revoked: false });
    const pairing = await relay.client.POST('/v1/installations/{id}/pairings', {
      params: { path: { id: phone.phone.id } },
      headers: phone.deviceAuth,
      body: {},
    });
    expect(pairing.response.status).toBe(401);

    // Thirty-one days later the revoked installation (no gateway, no pairing, no decision) is eligible.
    relay.clock.advance(31 * DAY_MS);
    const preview = await admin.prunePreview.query();
    expect(preview.eligible).toBeGreaterThanOrEqual(1);
    expect(preview.removed).toBe(0);
    expect((await admin.storageStatus.query()).installations.total).toBe(status.installations.total);
    // Apply confirms the number the preview showed: any other is refused and removes nothing.
    expect(await refusal(admin.pruneApply.mutate({ expectEligible: preview.eligible + 1 }))).toBe(409);
    expect((await admin.storageStatus.query()).installations.total).toBe(status.installations.total);
    const applied = await admin.pruneApply.mutate({ expectEligible: preview.eligible });
    expect(applied.removed).toBe(preview.eligible);
    expect(applied.backupPath).toMatch(/relay-prune\.backup-/);
    expect(await refusal(admin.installation.query({ installationId: phone.phone.id }))).toBe(404);
    const after = await admin.storageStatus.query();
    expect(after.installations.total).toBe(status.installations.total - applied.removed);
    expect((await admin.prunePreview.query()).eligible).toBe(0);
  });

  it('the limits in force: every entry of the table with its variable, default and value', async () => {
    const admin = adminClient(relay.baseUrl, ADMIN_TOKEN);
    const { limits, fixed } = await admin.limits.query();
    expect(limits.map((l) => l.name).sort()).toEqual(Object.keys(LIMIT_TABLE).sort());
    expect(limits.find((l) => l.name === 'maxGatewaysPerInstallation')).toEqual({
      name: 'maxGatewaysPerInstallation',
      env: 'RELAY_MAX_GATEWAYS_PER_INSTALLATION',
      value: 7,
      default: 64,
    });
    expect(Object.keys(fixed).length).toBeGreaterThan(0);
  });
});
