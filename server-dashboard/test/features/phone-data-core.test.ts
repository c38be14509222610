import { readFileSync, statSync, existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { phoneDataRoutes } from '@conduit/contracts/dashboard/phone-data';
import type { Host } from '../../src/app.js';
import { DetailError } from '../../src/kernel/detail-errors.js';
import { sealedIngest } from '../../src/kernel/phone-data/index.js';
import {
  batchAad,
  deviceKeys,
  directionKey,
  keyId,
  newHostKeyPair,
  openWith,
  sealWith,
  sharedSecret,
  voiceAad,
  type PhoneDataDirection,
} from '../../src/kernel/phone-data/sealing.js';
import { ManualClock, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { chachaOpen, chachaSeal, PhoneStandIn, voiceAadOf } from '../support/phone-stand-in.js';
import { PhoneDataStore } from '../../src/kernel/phone-data/store.js';
import { openVoiceCall, sealVoiceAnswer } from '../../src/kernel/phone-data/voice-reads.js';
import { PHONE_DATA_VECTOR_FILE, phoneDataVectorsText } from '../fixtures/vectors/derive-phone-data-vectors.js';

/**
 * The sealed-ingest core, through a minimal feature of its own (`probe`), so what is pinned here is the
 * core's behaviour and not health's: key agreement, seals, replays, limits, re-keys, status and wipes.
 */

const LABEL = 'conduit-probe-v1';
const probeRoutes = phoneDataRoutes({
  feature: 'probe',
  title: 'Probe',
  batchLimitText: 'over 256 KiB',
  uploadLimitText: 'too many',
});
const probeBatch = z.object({ v: z.literal(1), items: z.array(z.object({ id: z.string(), value: z.string() })) });

const probeFeature = sealedIngest({
  feature: 'probe',
  title: 'Probe',
  label: LABEL,
  routes: probeRoutes,
  limits: { devicesPerProfile: 4, sealedBatchMaxBytes: 256 * 1024, uploadsPerMinute: 10_000 },
  store: {
    schema: 'CREATE TABLE IF NOT EXISTS probe_items (device_id TEXT NOT NULL, id TEXT NOT NULL, value TEXT NOT NULL);',
    deviceTables: ['probe_items'],
  },
  parseBatch: (plain) => {
    const parsed = probeBatch.safeParse(plain);
    if (!parsed.success) throw new DetailError(400, 'The batch is invalid');
    return parsed.data;
  },
  storeBatch: (store, deviceId, batch) => {
    for (const item of batch.items) {
      store.db
        .prepare('INSERT INTO probe_items (device_id, id, value) VALUES (?, ?, ?)')
        .run(deviceId, item.id, item.value);
    }
    return { stored: batch.items.length, ignored: 0 };
  },
  summarize: (store, deviceId) => ({
    counts: {
      items: (
        store.db.prepare('SELECT COUNT(*) AS n FROM probe_items WHERE device_id = ?').get(deviceId) as { n: number }
      ).n,
    },
    firstDay: null,
    lastDay: null,
  }),
});

const home = tempHermesHome();
const clock = new ManualClock();
let host: Host & { url: string };
const fileOf = (profile: string) =>
  path.join(profile === 'default' ? home.root : path.join(home.root, 'profiles', profile), 'conduit-probe.sqlite3');

/** The store's rows as SQLite sees them. */
function rows(profile: string, deviceId?: string): { device_id: string; id: string; value: string }[] {
  const db = new Database(fileOf(profile), { readonly: true, fileMustExist: true });
  try {
    return (
      deviceId
        ? db.prepare('SELECT * FROM probe_items WHERE device_id = ?').all(deviceId)
        : db.prepare('SELECT * FROM probe_items').all()
    ) as { device_id: string; id: string; value: string }[];
  } finally {
    db.close();
  }
}

/** Every byte of the store on disk, WAL included. */
function fileBytes(profile: string): Buffer {
  const file = fileOf(profile);
  return Buffer.concat(
    ['', '-wal'].map((suffix) => (existsSync(file + suffix) ? readFileSync(file + suffix) : Buffer.alloc(0))),
  );
}

const phone = (deviceId: string, options: { secret?: Uint8Array; profile?: string } = {}) =>
  new PhoneStandIn(host.url, 'probe', LABEL, deviceId, options);
const items = (...values: string[]) => ({ v: 1, items: values.map((value, i) => ({ id: `i${i}`, value })) });

beforeAll(async () => {
  host = await startHost(testConfig(home.root, { clock }), { features: [probeFeature] });
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
});

describe('vectors (node:crypto) reproduced by the @noble implementation', () => {
  const vectors = JSON.parse(readFileSync(PHONE_DATA_VECTOR_FILE, 'utf8')) as {
    features: {
      label: string;
      host_secret: string;
      host_public: string;
      device_secret: string;
      device_public: string;
      shared: string;
      kid: string;
      device_id: string;
      keys: Record<PhoneDataDirection, string>;
      cases: { direction: PhoneDataDirection; aad: string; nonce: string; plaintext: string; sealed: string }[];
    }[];
  };
  const bytes = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));
  const hex = (value: Uint8Array) => Buffer.from(value).toString('hex');

  it('regenerating the vectors gives the same file', () => {
    expect(phoneDataVectorsText()).toBe(readFileSync(PHONE_DATA_VECTOR_FILE, 'utf8'));
  });

  it('every key, kid and seal matches byte for byte, and every seal opens only in its own direction', () => {
    expect(vectors.features.length).toBeGreaterThan(0);
    for (const vector of vectors.features) {
      const hostPair = newHostKeyPair(bytes(vector.host_secret));
      const devicePair = newHostKeyPair(bytes(vector.device_secret));
      expect(hex(hostPair.public)).toBe(vector.host_public);
      expect(hex(devicePair.public)).toBe(vector.device_public);
      const shared = sharedSecret(hostPair.secret, devicePair.public);
      expect(shared && hex(shared)).toBe(vector.shared);
      // The phone's side of the agreement gives the same secret.
      expect(hex(sharedSecret(devicePair.secret, hostPair.public) ?? new Uint8Array())).toBe(vector.shared);
      expect(keyId(vector.label, devicePair.public, hostPair.public)).toBe(vector.kid);
      const keys = deviceKeys(vector.label, hostPair.secret, hostPair.public, devicePair.public);
      expect(keys?.kid).toBe(vector.kid);
      for (const [direction, key] of Object.entries(vector.keys) as [PhoneDataDirection, string][]) {
        expect(
          hex(directionKey(vector.label, direction, bytes(vector.shared), devicePair.public, hostPair.public)),
        ).toBe(key);
        expect(hex(keys?.keys[direction] ?? new Uint8Array())).toBe(key);
      }
      expect(vector.cases.map((c) => c.direction).sort()).toEqual(Object.keys(vector.keys).sort());
      for (const c of vector.cases) {
        const key = bytes(vector.keys[c.direction]);
        const plain = new TextEncoder().encode(c.plaintext);
        expect(hex(sealWith(key, bytes(c.nonce), c.aad, plain))).toBe(c.sealed);
        expect(Buffer.from(openWith(key, bytes(c.nonce), c.aad, bytes(c.sealed)) ?? []).toString('utf8')).toBe(
          c.plaintext,
        );
        for (const other of Object.keys(vector.keys) as PhoneDataDirection[]) {
          if (other === c.direction) continue;
          expect(openWith(bytes(vector.keys[other]), bytes(c.nonce), c.aad, bytes(c.sealed))).toBeNull();
        }
      }
      const ingest = vector.cases.find((c) => c.direction === 'ingest device-to-host');
      expect(ingest?.aad).toBe(batchAad(vector.label, vector.device_id, vector.kid, 'batch-0001'));
      const voice = vector.cases.find((c) => c.direction === 'voice device-to-host');
      expect(voice?.aad).toBe(voiceAad(vector.label, 'conduit_health', vector.kid, vector.device_id, 'call-7f3a'));
    }
  });
});

describe('the sealed-ingest core', () => {
  it('agrees a key (only public keys on the wire) and keeps a sealed batch in a 0600 WAL store', async () => {
    const device = phone('dev-a');
    const agreed = await device.agree();
    expect(agreed.status).toBe(200);
    expect(Object.keys(agreed.body).sort()).toEqual(['host_key', 'kid', 'ok', 'replaced', 'v']);
    expect(agreed.body.replaced).toBe(false);
    expect(statSync(fileOf('default')).mode & 0o777).toBe(0o600);
    const db = new Database(fileOf('default'), { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();

    const sent = await device.send(items('alpha', 'beta'));
    expect(sent).toEqual({ status: 200, body: { ok: true, batch_id: 'b-dev-a-1', stored: 2, ignored: 0 } });
    expect(rows('default', 'dev-a').map((row) => row.value)).toEqual(['alpha', 'beta']);
  });

  it('refuses tampered, replayed, re-addressed and wrong-key batches with 4xx and stores nothing', async () => {
    const device = phone('dev-b');
    await device.agree();
    const envelope = device.seal(items('gamma'));
    const ct = Buffer.from(envelope.ct, 'base64url');
    ct[0] = (ct[0] ?? 0) ^ 1;
    expect((await device.ingest({ ...envelope, ct: ct.toString('base64url') })).status).toBe(400);
    // The batch id is in the associated data: another id does not open.
    expect((await device.ingest({ ...envelope, batch_id: 'other' })).status).toBe(400);
    // Another phone's key under this device's id and kid does not open either.
    const impostor = phone('dev-b', { secret: Buffer.alloc(32, 7) });
    impostor.hostKey = device.hostKey;
    impostor.kid = device.kid;
    expect((await impostor.send(items('evil'))).status).toBe(400);
    expect(rows('default', 'dev-b')).toEqual([]);

    expect((await device.ingest(envelope)).status).toBe(200);
    const replay = await device.ingest(envelope);
    expect(replay.status).toBe(409);
    expect(rows('default', 'dev-b').map((row) => row.value)).toEqual(['gamma']);

    const unknown = phone('dev-unknown');
    unknown.hostKey = device.hostKey;
    unknown.kid = device.kid;
    expect((await unknown.send(items('x'))).status).toBe(412);
    expect((await device.ingest('not json')).status).toBe(400);
    expect((await device.ingest({ ...envelope, nonce: 'short' })).status).toBe(400);
    expect((await device.send('{"v": 1, "items": "no"}')).status).toBe(400);
    expect((await device.send('not json inside')).status).toBe(400);
    expect(rows('default', 'dev-b')).toHaveLength(1);
  });

  it('refuses a batch over 256 KiB with 413 and stores nothing', async () => {
    const device = phone('dev-c');
    await device.agree();
    const big = await device.send(items('x'.repeat(256 * 1024)));
    expect(big.status).toBe(413);
    expect(rows('default', 'dev-c')).toEqual([]);
    expect((await device.send(items('x'.repeat(200 * 1024)))).status).toBe(200);
  });

  it('refuses a low-order device key and a malformed one', async () => {
    const zero = await phone('dev-z').call('POST', 'key', { v: 1, device_id: 'dev-z', device_key: 'A'.repeat(43) });
    expect(zero.status).toBe(400);
    const short = await phone('dev-z').call('POST', 'key', { v: 1, device_id: 'dev-z', device_key: 'AAAA' });
    expect(short.status).toBe(400);
  });

  it('the same device key again keeps its data; a new key for the device id drops it', async () => {
    const secret = Buffer.alloc(32, 42);
    const first = phone('dev-r', { secret, profile: 'work' });
    await first.agree();
    await first.send(items('kept'));
    const again = await phone('dev-r', { secret, profile: 'work' }).agree();
    expect(again.body).toMatchObject({ replaced: false, kid: first.kid });
    expect(rows('work', 'dev-r')).toHaveLength(1);

    const rekeyed = phone('dev-r', { profile: 'work' });
    const answer = await rekeyed.agree();
    expect(answer.body.replaced).toBe(true);
    expect(rows('work', 'dev-r')).toEqual([]);
    // The earlier key's batches no longer open: its kid is gone.
    expect((await first.send(items('late'))).status).toBe(412);
    expect((await rekeyed.send(items('fresh'))).status).toBe(200);
  });

  it('holds at most 4 devices per profile', async () => {
    const profile = 'work';
    const devices = ['d1', 'd2', 'd3'].map((id) => phone(id, { profile }));
    for (const device of devices) expect((await device.agree()).status).toBe(200);
    // dev-r from the test before is the fourth.
    const fifth = await phone('d5', { profile }).agree();
    expect(fifth.status).toBe(409);
    expect(fifth.body.detail).toMatch(/4 probe devices/);
    // A known device may still re-key.
    expect((await phone('d1', { profile }).agree()).status).toBe(200);
  });

  it('status shows counts and dates, never values', async () => {
    const status = await phone('dev-a').call('GET', 'status');
    expect(status.status).toBe(200);
    expect(status.body.enabled).toBe(true);
    const text = JSON.stringify(status.body);
    expect(text).not.toMatch(/alpha|beta|gamma/);
    const devices = status.body.devices as { device_id: string; counts: Record<string, number>; batches: number }[];
    expect(devices.find((d) => d.device_id === 'dev-a')).toMatchObject({ counts: { items: 2 }, batches: 1 });
    const none = await phone('x', { profile: 'nobody-here' }).call('GET', 'status');
    expect(none.status).toBe(503);
  });

  it('wiping a device removes its rows and their pages; wiping all removes the file', async () => {
    const device = phone('dev-w');
    await device.agree();
    const marker = 'MARKER-7c1d2e-secret-reading';
    await device.send(items(marker));
    expect(fileBytes('default').includes(marker)).toBe(true);

    const wiped = await device.call('POST', 'wipe', { device_id: 'dev-w' });
    expect(wiped).toEqual({ status: 200, body: { ok: true, devices: 1 } });
    expect(rows('default', 'dev-w')).toEqual([]);
    expect(fileBytes('default').includes(marker)).toBe(false);
    expect(rows('default', 'dev-a')).toHaveLength(2);
    expect((await device.send(items('after'))).status).toBe(412);

    expect((await device.call('POST', 'wipe', { device_id: 'never' })).body).toEqual({ ok: true, devices: 0 });
    expect((await device.call('POST', 'wipe', {})).status).toBe(400);
    const all = await device.call('POST', 'wipe', { all: true });
    expect(all.status).toBe(200);
    expect(existsSync(fileOf('default'))).toBe(false);
    expect((await device.call('GET', 'status')).body).toEqual({ ok: true, enabled: false, devices: [] });
  });
});

describe('sealed voice reads', () => {
  const shape = { feature: 'probe', schema: '', deviceTables: [] };
  /** A voice call sealed by the phone, as Conduit sends a voice model's tool call. */
  function voiceCall(device: PhoneStandIn, tool: string, callId: string, inner: Record<string, unknown> = {}) {
    const nonce = Buffer.alloc(12, 3);
    const plain = Buffer.from(
      JSON.stringify({ call_id: callId, tool, args: { action: 'overview' }, provider: 'gemini-live', ...inner }),
    );
    const aad = voiceAadOf(LABEL, tool, device.kid ?? '', device.deviceId, callId);
    const ct = chachaSeal(device.key('voice device-to-host'), nonce, aad, plain);
    return {
      v: 1,
      device_id: device.deviceId,
      kid: device.kid,
      call_id: callId,
      tool,
      nonce: nonce.toString('base64url'),
      ct: ct.toString('base64url'),
    };
  }
  const workStore = () => PhoneDataStore.open(path.dirname(fileOf('work')), shape, false) as PhoneDataStore;

  it("opens only the asking device's call, and seals the answer for it alone", async () => {
    const device = phone('voice-1', { profile: 'work' });
    await phone('d2', { profile: 'work' }).call('POST', 'wipe', { device_id: 'd2' });
    expect((await device.agree()).status).toBe(200);
    const store = workStore();
    try {
      const call = voiceCall(device, 'conduit_health', 'call-1');
      const opened = openVoiceCall(store, LABEL, call, 0);
      if (typeof opened === 'string') throw new Error(opened);
      expect(opened).toMatchObject({ deviceId: 'voice-1', callId: 'call-1', args: { action: 'overview' } });

      const answer = sealVoiceAnswer(LABEL, opened, { ok: true, steps: 1 });
      const aad = voiceAadOf(LABEL, 'conduit_health', device.kid ?? '', 'voice-1', 'call-1');
      const nonce = Buffer.from(answer.nonce, 'base64url');
      const ct = Buffer.from(answer.ct, 'base64url');
      expect(JSON.parse(chachaOpen(device.key('voice host-to-device'), nonce, aad, ct)?.toString() ?? '')).toEqual({
        call_id: 'call-1',
        result: { ok: true, steps: 1 },
      });
      expect(chachaOpen(device.key('voice device-to-host'), nonce, aad, ct)).toBeNull();

      // Another tool name in the clear than the one bound, or inside the seal, refuses the call.
      expect(openVoiceCall(store, LABEL, { ...call, tool: 'conduit_location' }, 0)).toBe('does_not_open');
      expect(openVoiceCall(store, LABEL, voiceCall(device, 'conduit_health', 'call-2', { tool: 'x' }), 0)).toBe(
        'invalid',
      );
      // The batch key does not open a voice call.
      const asBatch = {
        ...call,
        ct: chachaSeal(device.key('ingest device-to-host'), Buffer.alloc(12, 3), 'x', Buffer.from('{}')).toString(
          'base64url',
        ),
      };
      expect(openVoiceCall(store, LABEL, asBatch, 0)).toBe('does_not_open');
      // A newly registered key for the device reads nothing sealed under the earlier one.
      store.close();
      await phone('voice-1', { profile: 'work' }).agree();
      const after = workStore();
      expect(openVoiceCall(after, LABEL, call, 0)).toBe('unknown_key');
      after.close();
    } finally {
      if (store.db.open) store.close();
    }
  });
});

describe('seen batch ids', () => {
  it('keeps only the newest per device, so the store does not grow without bound', () => {
    const root = tempHermesHome();
    const store = PhoneDataStore.open(
      root.root,
      { feature: 'bounded', schema: '', deviceTables: [], seenBatchesKept: 3 },
      true,
    );
    try {
      if (!store) throw new Error('store not created');
      store.putDevice('phone-a', new Uint8Array(32).fill(1), 'kid-a', 1);
      store.putDevice('phone-b', new Uint8Array(32).fill(2), 'kid-b', 1);
      for (let i = 1; i <= 5; i += 1) store.acceptBatch('phone-a', `a-${i}`, 100 + i, () => undefined);
      store.acceptBatch('phone-b', 'b-1', 50, () => undefined);
      expect(['a-1', 'a-2', 'a-3', 'a-4', 'a-5'].map((id) => store.seenBatch('phone-a', id))).toEqual([
        false,
        false,
        true,
        true,
        true,
      ]);
      expect(store.batchCount('phone-a')).toBe(3);
      // Another device's ids are its own: b-1 is older than every a-*, and kept.
      expect(store.seenBatch('phone-b', 'b-1')).toBe(true);
    } finally {
      store?.close();
      root.cleanup();
    }
  });
});
