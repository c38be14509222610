/**
 * The credential index (src/store/credential-index.ts, indexed-store.ts): loaded from the database a
 * page at a time, never answering from a partial load, written through after each committed write, and
 * answering the event path and every credential check with the database unreachable for those reads.
 */
import { randomUUID } from 'node:crypto';
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RelayAdminRouter } from '../src/admin/admin-router.js';
import { sha256Hex } from '../src/domain/credentials.js';
import { normalizePreferences } from '../src/domain/preferences.js';
import { MemoryCredentialIndex, type IndexInvalidation, type IndexSource } from '../src/store/credential-index.js';
import { IndexedStore } from '../src/store/indexed-store.js';
import { openPrismaStore, type PrismaStore } from '../src/store/prisma-store.js';
import type { GatewayRecord, InstallationRecord } from '../src/store/records.js';
import type { RelayStore } from '../src/store/relay-store.js';
import {
  deviceToken,
  paired,
  register,
  ROOMY_BUDGETS,
  startRelay,
  STORE_KINDS,
  testDatabase,
  type Relay,
} from './support/harness.js';

/** The reads a credential check or an event's routing would make: the index must answer them. */
const CREDENTIAL_READS = new Set<string>(['findInstallation', 'findGateway', 'listGateways', 'countGateways']);

/**
 * The store with its credential reads recorded, and refused once `offline` is set (the database
 * unreachable for them); every other method, writes included, reaches the database.
 */
function guarded(store: PrismaStore) {
  const state = { offline: false, reads: [] as string[] };
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (typeof property !== 'string' || !CREDENTIAL_READS.has(property)) return method.bind(target);
      return (...args: unknown[]) => {
        state.reads.push(property);
        if (state.offline) return Promise.reject(new Error('database unreachable'));
        return method.apply(target, args);
      };
    },
  });
  return { store: proxy, state };
}

/** The store with one write failing, before it reaches the database or after it committed. */
function failing(store: PrismaStore, failed: keyof RelayStore, when: 'before' | 'after-commit'): PrismaStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => Promise<unknown>;
      if (property !== failed) return method.bind(target);
      return async (...args: unknown[]) => {
        if (when === 'after-commit') await method.apply(target, args);
        throw new Error('connection lost');
      };
    },
  });
}

function installation(overrides: Partial<InstallationRecord> = {}): InstallationRecord {
  const now = Date.UTC(2026, 11, 1, 12, 0, 0, 7);
  return {
    id: randomUUID(),
    bundleId: 'com.example.conduit',
    deviceToken: deviceToken(Math.floor(Math.random() * 200) + 16),
    voipToken: null,
    watchVoipToken: null,
    locationPushToken: null,
    environment: 'production',
    deviceSecretHash: sha256Hex(randomUUID()),
    active: true,
    preferences: normalizePreferences({ show_previews: true }),
    createdAt: now,
    updatedAt: now,
    pairedAt: now,
    lastSeenAt: now,
    ...overrides,
  };
}

function gateway(installationId: string, createdAt: number): GatewayRecord {
  return {
    installationId,
    id: randomUUID(),
    name: 'Host',
    secretHash: sha256Hex(randomUUID()),
    dashboardId: null,
    createdAt,
    pluginVersion: null,
    pluginCapabilities: null,
    lastEventAt: null,
  };
}

async function addGateway(store: PrismaStore, record: GatewayRecord): Promise<void> {
  await store.db.gateway.create({
    data: {
      installationId: record.installationId,
      id: record.id,
      name: record.name,
      secretHash: record.secretHash,
      createdAt: new Date(record.createdAt),
    },
  });
}

/** A gate a test opens when it is ready. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe.each(STORE_KINDS)('the credential index on %s', (kind) => {
  let release: () => Promise<void>;
  let url: string;
  let store: PrismaStore;

  beforeAll(async () => {
    const db = await testDatabase(kind);
    release = db.release;
    url = db.url;
    store = await openPrismaStore(url);
  });

  afterAll(async () => {
    await store?.close();
    await release?.();
  });

  it('the boot-time load reads both tables a page at a time and then answers every row without a query', async () => {
    const phones = Array.from({ length: 7 }, () => installation());
    for (const phone of phones) await store.insertInstallation(phone);
    const hosts = phones
      .slice(0, 3)
      .flatMap((phone, i) => [
        gateway(phone.id, phone.createdAt + 2),
        ...(i === 0 ? [gateway(phone.id, phone.createdAt + 1)] : []),
      ]);
    for (const host of hosts) await addGateway(store, host);
    const pages: { table: string; take: number; rows: number }[] = [];
    const source: IndexSource = {
      pageInstallations: async (after, take) => {
        const page = await store.pageInstallations(after, take);
        pages.push({ table: 'installations', take, rows: page.rows.length });
        return page;
      },
      pageGateways: async (after, take) => {
        const page = await store.pageGateways(after, take);
        pages.push({ table: 'gateways', take, rows: page.rows.length });
        return page;
      },
      writesElsewhere: () => store.writesElsewhere(),
    };
    const index = new MemoryCredentialIndex(2);
    const total = await store.countInstallations();
    const loaded = await index.load(source);
    const gatewayRows = await store.db.gateway.count();
    expect(loaded).toEqual({ installations: total, gateways: gatewayRows });
    // Bounded: no read asks for more than a page, and each table takes ⌊rows / page⌋ + 1 reads.
    expect(pages.every((page) => page.take === 2 && page.rows <= 2)).toBe(true);
    expect(pages.filter((page) => page.table === 'installations')).toHaveLength(Math.floor(total / 2) + 1);
    expect(pages.filter((page) => page.table === 'gateways')).toHaveLength(Math.floor(gatewayRows / 2) + 1);
    for (const phone of phones) {
      expect(index.installation(phone.id)).toEqual(phone);
      expect(index.gateways(phone.id)).toEqual(await store.listGateways(phone.id));
    }
    // Oldest first, as the database lists them, though paged in the store's order.
    expect(index.gateways(phones[0]!.id)?.map((host) => host.createdAt)).toEqual([
      phones[0]!.createdAt + 1,
      phones[0]!.createdAt + 2,
    ]);
    expect(index.installation(randomUUID())).toBeNull();
    expect(index.gateway(phones[0]!.id, randomUUID())).toBeNull();
  });

  it('until the load is complete every lookup asks the database: a partial index never says "no such credential"', async () => {
    const early = installation();
    await store.insertInstallation(early);
    const host = gateway(early.id, early.createdAt);
    await addGateway(store, host);
    const secondPage = gate();
    let pagesRead = 0;
    const index = new MemoryCredentialIndex(1);
    const indexed = new IndexedStore(store, index);
    const source: IndexSource = {
      pageInstallations: async (after, take) => {
        pagesRead += 1;
        if (pagesRead === 2) await secondPage.opened;
        return store.pageInstallations(after, take);
      },
      pageGateways: (after, take) => store.pageGateways(after, take),
      writesElsewhere: () => store.writesElsewhere(),
    };
    const loading = index.load(source);
    expect(index.complete).toBe(false);
    expect(index.installation(early.id)).toBeUndefined();
    expect(index.gateway(early.id, host.id)).toBeUndefined();
    // Through the store: the database's answer, not the partial index's.
    expect(await indexed.findGateway(early.id, host.id)).toEqual(host);
    expect(await indexed.findInstallation(early.id)).toEqual(early);
    secondPage.open();
    await loading;
    expect(index.complete).toBe(true);
    expect(index.gateway(early.id, host.id)).toEqual(host);
  });

  it('a write committed while its row was being read wins over the page that read it', async () => {
    const phone = installation();
    await store.insertInstallation(phone);
    const index = new MemoryCredentialIndex();
    const indexed = new IndexedStore(store, index);
    const pageRead = gate();
    const pageReturns = gate();
    const loading = index.load({
      pageInstallations: async (after, take) => {
        const rows = await store.pageInstallations(after, take);
        pageRead.open();
        await pageReturns.opened;
        return rows;
      },
      pageGateways: (after, take) => store.pageGateways(after, take),
      writesElsewhere: () => store.writesElsewhere(),
    });
    await pageRead.opened;
    const rotated = 'ef'.repeat(32);
    await indexed.updateInstallation(phone.id, { deviceToken: rotated, updatedAt: phone.updatedAt + 1 });
    pageReturns.open();
    await loading;
    expect((await indexed.findInstallation(phone.id))?.deviceToken).toBe(rotated);
  });

  it('another connection writing while the load pages (a VACUUM renumbers SQLite rows) makes SQLite read again; PostgreSQL pages by key and needs no check', async () => {
    const before = installation();
    await store.insertInstallation(before);
    const index = new MemoryCredentialIndex(1);
    const firstPage = gate();
    const resume = gate();
    let readings = 0;
    const loading = index.load({
      pageInstallations: async (after, take) => {
        if (after === null) readings += 1;
        const page = await store.pageInstallations(after, take);
        if (readings === 1 && after === null) {
          firstPage.open();
          await resume.opened;
        }
        return page;
      },
      pageGateways: (after, take) => store.pageGateways(after, take),
      writesElsewhere: () => store.writesElsewhere(),
    });
    await firstPage.opened;
    // Another process's connection: its commit is not this store's own write.
    const other = await openPrismaStore(url);
    const elsewhere = installation();
    try {
      await other.insertInstallation(elsewhere);
      if (kind === 'sqlite') await other.db.$executeRawUnsafe('VACUUM');
    } finally {
      await other.close();
    }
    resume.open();
    const loaded = await loading;
    if (kind === 'sqlite') {
      expect(readings).toBe(2);
      expect(loaded).toEqual({
        installations: await store.countInstallations(),
        gateways: await store.db.gateway.count(),
      });
      expect(index.installation(elsewhere.id)).toEqual(elsewhere);
    } else {
      // Several processes share PostgreSQL: another one's rows reach the index as invalidations instead.
      expect(await store.writesElsewhere()).toBeNull();
      expect(readings).toBe(1);
    }
    expect(index.installation(before.id)).toEqual(before);
  });

  it('a load stops reading again after three attempts when another writer never stops', async () => {
    let stamp = 0;
    let readings = 0;
    const index = new MemoryCredentialIndex();
    const loaded = await index.load({
      pageInstallations: async (after, take) => {
        if (after === null) readings += 1;
        return store.pageInstallations(after, take);
      },
      pageGateways: (after, take) => store.pageGateways(after, take),
      writesElsewhere: () => Promise.resolve(String((stamp += 1))),
    });
    expect(readings).toBe(3);
    expect(loaded?.installations).toBe(await store.countInstallations());
    expect(index.complete).toBe(true);
  });

  it('every write reaches the index once committed: answers change with no read of the database', async () => {
    const { store: guard, state } = guarded(store);
    const indexed = new IndexedStore(guard);
    await indexed.loadIndex();
    state.offline = true;
    const phone = installation({ pairedAt: null });
    await indexed.insertInstallation(phone);
    expect(await indexed.findInstallation(phone.id)).toEqual(phone);

    const host = gateway(phone.id, phone.createdAt + 5);
    const codeHash = sha256Hex(randomUUID());
    await indexed.replacePairing({
      codeHash,
      installationId: phone.id,
      expiresAt: Date.now() + 60_000,
      dashboardId: null,
    });
    expect(await indexed.claimPairing(codeHash, host)).toBe(true);
    expect(await indexed.findGateway(phone.id, host.id)).toEqual(host);
    expect((await indexed.findInstallation(phone.id))?.pairedAt).toBe(host.createdAt);
    expect(await indexed.countGateways(phone.id)).toBe(1);

    await indexed.updateInstallation(phone.id, { voipToken: 'aa'.repeat(32), updatedAt: phone.updatedAt + 9 });
    await indexed.clearTokenIfUnchanged(phone.id, 'voipToken', 'bb'.repeat(32));
    expect((await indexed.findInstallation(phone.id))?.voipToken).toBe('aa'.repeat(32));
    await indexed.clearTokenIfUnchanged(phone.id, 'voipToken', 'aa'.repeat(32));
    expect((await indexed.findInstallation(phone.id))?.voipToken).toBeNull();

    await indexed.recordGatewayActivities([
      { installationId: phone.id, gatewayId: host.id, activity: { pluginVersion: '3.1.0', lastEventAt: 42_000 } },
    ]);
    expect(await indexed.findGateway(phone.id, host.id)).toMatchObject({ pluginVersion: '3.1.0', lastEventAt: 42_000 });

    await indexed.deleteGateway(phone.id, host.id);
    expect(await indexed.findGateway(phone.id, host.id)).toBeNull();
    await indexed.updateInstallation(phone.id, { active: false, updatedAt: phone.updatedAt + 10 });
    expect((await indexed.findInstallation(phone.id))?.active).toBe(false);

    // Never paired, not seen for a week: the expiry removes it, and the index forgets it with its rows.
    const stale = installation({ pairedAt: null, lastSeenAt: Date.UTC(2026, 0, 1), createdAt: Date.UTC(2026, 0, 1) });
    await indexed.insertInstallation(stale);
    await indexed.recordInstallationSeen(stale.id, Date.UTC(2026, 0, 2));
    expect((await indexed.findInstallation(stale.id))?.lastSeenAt).toBe(Date.UTC(2026, 0, 2));
    const removed = await indexed.expireUnpairedInstallations(Date.UTC(2026, 1, 1), Date.UTC(2026, 1, 1));
    expect(removed).toContain(stale.id);
    expect(await indexed.findInstallation(stale.id)).toBeNull();
    expect(state.reads).toEqual([]);
    // The database agrees with every answer above.
    expect(await store.findInstallation(stale.id)).toBeNull();
    expect(await store.findInstallation(phone.id)).toEqual(await indexed.findInstallation(phone.id));
  });

  it('a write the database refused leaves the answer as it was; one that committed before failing is re-read', async () => {
    const phone = installation();
    const host = gateway(phone.id, phone.createdAt);
    await store.insertInstallation(phone);
    await addGateway(store, host);
    const rotated = 'cd'.repeat(32);
    for (const when of ['before', 'after-commit'] as const) {
      const indexed = new IndexedStore(failing(store, 'updateInstallation', when));
      await indexed.loadIndex();
      const before = await indexed.findInstallation(phone.id);
      await expect(
        indexed.updateInstallation(phone.id, { deviceToken: rotated, updatedAt: phone.updatedAt + 1 }),
      ).rejects.toThrow('connection lost');
      // The database is the truth either way: unchanged after a refusal, changed after a lost commit.
      expect(await indexed.findInstallation(phone.id)).toEqual(
        when === 'before' ? before : { ...phone, deviceToken: rotated, updatedAt: phone.updatedAt + 1 },
      );
      expect(await indexed.findGateway(phone.id, host.id)).toEqual(host);
    }
    const indexed = new IndexedStore(failing(store, 'deleteGateway', 'before'));
    await indexed.loadIndex();
    await expect(indexed.deleteGateway(phone.id, host.id)).rejects.toThrow('connection lost');
    expect(await indexed.findGateway(phone.id, host.id)).toEqual(host);
  });

  it("another process's change arrives as forget: the next lookup reads the database (the seam of several processes)", async () => {
    const phone = installation();
    await store.insertInstallation(phone);
    let forget: (ids: readonly string[]) => void = () => undefined;
    const published: string[][] = [];
    const invalidation: IndexInvalidation = {
      publish: (ids) => published.push([...ids]),
      subscribe: (listener) => {
        forget = (ids) => listener.forget(ids);
        return () => undefined;
      },
    };
    const indexed = new IndexedStore(store, undefined, invalidation);
    await indexed.loadIndex();
    // Another relay process deactivates the phone: this one does not know until told.
    await store.updateInstallation(phone.id, { active: false, updatedAt: phone.updatedAt + 1 });
    expect((await indexed.findInstallation(phone.id))?.active).toBe(true);
    forget([phone.id]);
    expect((await indexed.findInstallation(phone.id))?.active).toBe(false);
    // And this process tells the others what it changed.
    await indexed.updateInstallation(phone.id, { active: true, updatedAt: phone.updatedAt + 2 });
    expect(published).toEqual([[phone.id]]);
  });

  it('with verifyMisses (replicas), a miss is checked in the database: a phone or host added elsewhere is found before any message', async () => {
    const indexed = new IndexedStore(store, undefined, undefined, { verifyMisses: true });
    const plain = new IndexedStore(store);
    await indexed.loadIndex();
    await plain.loadIndex();
    // Another replica registers a phone and pairs a host; no invalidation reaches this one yet.
    const phone = installation();
    await store.insertInstallation(phone);
    expect(await plain.findInstallation(phone.id)).toBeNull();
    expect(await indexed.findInstallation(phone.id)).toEqual(phone);
    const host = gateway(phone.id, phone.createdAt + 1);
    await addGateway(store, host);
    expect(await indexed.findGateway(phone.id, host.id)).toEqual(host);
    // Put back in the index: the next lookups answer from memory.
    expect(indexed.index.installation(phone.id)).toEqual(phone);
    expect(indexed.index.gateway(phone.id, host.id)).toEqual(host);
    // A credential nobody holds is still no credential.
    expect(await indexed.findInstallation(randomUUID())).toBeNull();
  });
});

describe.each(STORE_KINDS)('the relay on %s with its database unreachable for credential reads', (kind) => {
  const ADMIN_TOKEN = 'i'.repeat(32) + '-index-admin';
  let release: () => Promise<void>;
  let relay: Relay;
  let state: { offline: boolean; reads: string[] };

  beforeAll(async () => {
    const db = await testDatabase(kind);
    release = db.release;
    relay = await startRelay(db.url, { ...ROOMY_BUDGETS, ADMIN_TOKEN }, (store) => {
      const guard = guarded(store);
      state = guard.state;
      return guard.store;
    });
    await relay.logLine((line) => line.message === 'credential index loaded');
  });

  afterAll(async () => {
    await relay?.close();
    await release?.();
  });

  const event = (auth: { authorization: string }) =>
    relay.client.POST('/v1/events', { headers: auth, body: { type: 'response.ready', event_id: randomUUID() } });

  it('events, registrations, pairing, updates and every revocation are answered and applied from memory', async () => {
    state.offline = true;
    const admin = createTRPCClient<RelayAdminRouter>({
      links: [httpLink({ url: `${relay.baseUrl}/admin/trpc`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })],
    });
    // Registered, paired and used at once.
    const first = await paired(relay);
    expect((await event(first.gatewayAuth)).response.status).toBe(202);
    expect(relay.apns.sent.at(-1)?.deviceToken).toBe(first.phone.token);

    // A re-registered token is the one the next push goes to.
    const rotated = deviceToken(250);
    const update = await relay.client.PUT('/v1/installations/{id}', {
      params: { path: { id: first.phone.id } },
      headers: first.deviceAuth,
      body: { device_token: rotated },
    });
    expect(update.response.status).toBe(200);
    expect((await event(first.gatewayAuth)).response.status).toBe(202);
    expect(relay.apns.sent.at(-1)?.deviceToken).toBe(rotated);

    // A host revoking itself is refused at once; so is one the operator revokes.
    const revoked = await relay.client.DELETE('/v1/gateways/current', { headers: first.gatewayAuth });
    expect(revoked.response.status).toBe(204);
    expect((await event(first.gatewayAuth)).response.status).toBe(401);
    const second = await paired(relay);
    expect((await event(second.gatewayAuth)).response.status).toBe(202);
    await admin.revokeGateway.mutate({ installationId: second.phone.id, gatewayId: second.gatewayId });
    expect((await event(second.gatewayAuth)).response.status).toBe(401);

    // APNs calling the device token gone deactivates the installation: its hosts are refused next.
    const third = await paired(relay);
    relay.apns.answer((token) =>
      token === third.phone.token ? { ok: false, status: 410, reason: 'Unregistered' } : undefined,
    );
    expect((await event(third.gatewayAuth)).response.status).toBe(502);
    expect((await event(third.gatewayAuth)).response.status).toBe(401);

    // The phone's own DELETE, and the operator's revocation: device and host credentials refused.
    const fourth = await paired(relay);
    const deleted = await relay.client.DELETE('/v1/installations/{id}', {
      params: { path: { id: fourth.phone.id } },
      headers: fourth.deviceAuth,
    });
    expect(deleted.response.status).toBe(204);
    expect((await relay.client.GET('/v1/meta', { headers: fourth.deviceAuth })).response.status).toBe(401);
    expect((await event(fourth.gatewayAuth)).response.status).toBe(401);
    const fifth = await paired(relay);
    await admin.revokeInstallation.mutate({ installationId: fifth.phone.id });
    expect((await event(fifth.gatewayAuth)).response.status).toBe(401);

    // A phone registered but never paired authenticates too.
    const lone = await register(relay);
    expect(
      (await relay.client.GET('/v1/meta', { headers: { authorization: `Bearer ${lone.credential}` } })).response.status,
    ).toBe(200);
    expect(state.reads).toEqual([]);
  });
});
