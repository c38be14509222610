import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { request as httpRequest } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { createRoomFilesFeature, createRoomImagesFeature } from '../../src/features/rooms/index.js';
import { ROOM_FILE_BOUNDS, sweepRoomFiles } from '../../src/features/rooms/room-files.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';

const PREFIX = '/api/plugins/conduit_push';
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]);
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d]);
const GIF = Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1');

const home = tempHermesHome();
/** Outside the Hermes home: where an escape would land. */
const outside = mkdtempSync(path.join(os.tmpdir(), 'conduit-outside-'));
// On the real time, so the uploads the routes make (real mtimes) are as young as the sweep sees them.
const clock = new ManualClock(Date.now());
const timers = new ManualTimers();
let host: Host & { url: string };
let freeBytes = 100 * 1024 ** 3;
const sweeps: number[] = [];
const sweepWaiters: (() => void)[] = [];

function profileHome(name: string): string {
  const dir = name === 'default' ? home.root : path.join(home.root, 'profiles', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function roomFilesOf(name: string): string {
  return path.join(profileHome(name), 'conduit', 'room-files');
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  cache: string | null;
}

async function call(method: string, route: string, body?: unknown, contentType = 'application/json'): Promise<Answer> {
  const response = await fetch(host.url + PREFIX + route, {
    method,
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': contentType },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    cache: response.headers.get('cache-control'),
  };
}

/** A request sent with its target exactly as written (fetch would resolve `..` before sending). */
function rawCall(method: string, target: string, body?: string): Promise<{ status: number; body: unknown }> {
  const url = new URL(host.url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: PREFIX + target,
        headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: response.statusCode ?? 0, body: parsed });
        });
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const upload = (name: unknown, bytes: Buffer, profile = '') =>
  call('POST', `/room-files${profile ? `?profile=${profile}` : ''}`, { name, data_base64: bytes.toString('base64') });

/** Every file and folder under `dir` (relative), or [] when it does not exist. */
function tree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

function nextSweep(): Promise<void> {
  return new Promise((resolve) => sweepWaiters.push(resolve));
}

beforeAll(async () => {
  for (const name of ['work', 'burst', 'pics', 'strict', 'many', 'ids', 'planted']) profileHome(name);
  host = await startHost(testConfig(home.root, { clock, timers }), {
    features: [
      createRoomFilesFeature({
        sweepTimers: timers,
        maxFileBytes: 4096,
        freeBytes: async () => freeBytes,
        onSweep: (removed) => {
          sweeps.push(removed);
          for (const wake of sweepWaiters.splice(0)) wake();
        },
      }),
      createRoomImagesFeature({ maxRooms: 3 }),
    ],
  });
});
afterAll(async () => {
  await host.app.close();
  home.cleanup();
  rmSync(outside, { recursive: true, force: true });
});
beforeEach(() => clock.advance(60_000));

describe('POST /room-files', () => {
  it('stores the file 0600 in a new 0700 folder under <home>/conduit/room-files and returns its @file: reference', async () => {
    const answer = await upload('photo.jpg', JPEG);
    expect(answer.status).toBe(200);
    expect(answer.cache).toBe('no-store');
    const stored = answer.body.path as string;
    expect(path.dirname(path.dirname(stored))).toBe(realpathSync(roomFilesOf('default')));
    expect(path.basename(path.dirname(stored))).toMatch(/^[0-9a-f]{32}$/);
    expect(path.basename(stored)).toBe('photo.jpg');
    expect(answer.body).toEqual({ ok: true, path: stored, ref_text: `@file:${stored}` });
    expect(readFileSync(stored)).toEqual(JPEG);
    expect(statSync(stored).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(stored)).mode & 0o777).toBe(0o700);
    // No temporary file is left beside it.
    expect(readdirSync(path.dirname(stored))).toEqual(['photo.jpg']);
  });

  it("keeps each profile's uploads in its own home, quotes a reference with spaces, and cleans awkward names", async () => {
    const answer = await upload('  .Trip plan: v2?.pdf', Buffer.from('%PDF-1.7'), 'work');
    const stored = answer.body.path as string;
    expect(path.dirname(path.dirname(stored))).toBe(realpathSync(roomFilesOf('work')));
    expect(path.basename(stored)).toBe('Trip plan_ v2_.pdf');
    expect(answer.body.ref_text).toBe(`@file:\`${stored}\``);
    const long = await upload(`${'n'.repeat(240)}.docx`, Buffer.from('PK'));
    expect(path.basename(long.body.path as string)).toBe(`${'n'.repeat(115)}.docx`);
  });

  it('refuses a name that is a path in any spelling with 400, and writes nothing anywhere', async () => {
    const before = tree(roomFilesOf('default'));
    const refusal = { detail: 'name must be a plain file name, not a path' };
    for (const name of [
      '../escape.txt',
      '../../../../../../tmp/escape.txt',
      '/etc/passwd',
      `${outside}/planted.txt`,
      'folder/inner.txt',
      '..\\escape.txt',
      '..',
      '%2e%2e%2fescape.txt',
      '%252e%252e%252fescape.txt',
      'nul\u0000byte.txt',
      'C:evil.txt',
    ]) {
      expect([name, await upload(name, Buffer.from('data'))]).toEqual([
        name,
        { status: 400, body: refusal, cache: 'no-store' },
      ]);
    }
    expect((await upload('', Buffer.from('x'))).body).toEqual({ detail: 'name is required' });
    expect((await upload(42, Buffer.from('x'))).body).toEqual({ detail: 'name is required' });
    expect(tree(roomFilesOf('default'))).toEqual(before);
    expect(readdirSync(outside)).toEqual([]);
    expect(existsSync('/tmp/escape.txt')).toBe(false);
  });

  it('refuses with 400 when the room-files folder is a symlink leading outside the home, and writes nothing', async () => {
    const dir = profileHome('linked');
    mkdirSync(path.join(dir, 'conduit'), { recursive: true });
    symlinkSync(outside, path.join(dir, 'conduit', 'room-files'));
    expect(await upload('photo.jpg', JPEG, 'linked')).toEqual({
      status: 400,
      body: { detail: 'The conduit/room-files folder leads outside this Hermes home; nothing was written' },
      cache: 'no-store',
    });
    expect(readdirSync(outside)).toEqual([]);

    // The same with the parent folder linked out: not even room-files is made there.
    const parent = profileHome('linked-parent');
    symlinkSync(outside, path.join(parent, 'conduit'));
    expect((await upload('photo.jpg', JPEG, 'linked-parent')).status).toBe(400);
    expect(readdirSync(outside)).toEqual([]);

    // A link that stays inside the home is followed.
    const inside = profileHome('linked-inside');
    mkdirSync(path.join(inside, 'storage'), { recursive: true });
    symlinkSync(path.join(inside, 'storage'), path.join(inside, 'conduit'));
    const stored = (await upload('photo.jpg', JPEG, 'linked-inside')).body.path as string;
    expect(stored.startsWith(path.join(realpathSync(inside), 'storage', 'room-files') + path.sep)).toBe(true);
  });

  it('answers 413 past the size limit (decoded, or the body itself), with nothing written', async () => {
    const before = tree(roomFilesOf('default'));
    expect(await upload('big.bin', Buffer.alloc(4097))).toEqual({
      status: 413,
      body: { detail: 'The file is larger than 4 KB' },
      cache: 'no-store',
    });
    expect((await upload('edge.bin', Buffer.alloc(4096))).status).toBe(200);
    const body = JSON.stringify({ name: 'huge.bin', data_base64: 'A'.repeat(200 * 1024) });
    expect(await call('POST', '/room-files', body)).toEqual({
      status: 413,
      body: { detail: 'Request body is too large' },
      cache: 'no-store',
    });
    expect(tree(roomFilesOf('default')).length).toBe(before.length + 2);
  });

  it("answers 415 when an image name's bytes are not that image, 400 for bad base64 or JSON", async () => {
    expect(await upload('photo.jpg', PNG)).toEqual({
      status: 415,
      body: { detail: "The file's contents are not a JPEG image, as its name says" },
      cache: 'no-store',
    });
    expect((await upload('photo.png', Buffer.from('<svg/>'))).status).toBe(415);
    expect((await upload('anim.GIF', GIF)).status).toBe(200);
    expect((await upload('photo.png', PNG)).status).toBe(200);
    expect((await upload('notes.txt', PNG)).status).toBe(200);
    expect(await call('POST', '/room-files', { name: 'a.txt', data_base64: 'not base64!' })).toMatchObject({
      status: 400,
      body: { detail: 'data_base64 is not base64' },
    });
    expect(await call('POST', '/room-files', '{"name": "a.txt",')).toMatchObject({
      status: 400,
      body: { detail: 'Request body is not JSON' },
    });
    expect((await call('POST', '/room-files', 'name=a.txt', 'text/plain')).status).toBe(415);
  });

  it('answers 507 when the upload would leave under 1 GB free, writing nothing', async () => {
    const before = tree(roomFilesOf('default'));
    freeBytes = 1024 ** 3 + JPEG.length - 1;
    try {
      expect(await upload('photo.jpg', JPEG)).toEqual({
        status: 507,
        body: { detail: 'This host does not have enough free space for the file' },
        cache: 'no-store',
      });
    } finally {
      freeBytes = 100 * 1024 ** 3;
    }
    expect(tree(roomFilesOf('default'))).toEqual(before);
  });

  it('caps uploads at 30 a minute per profile', async () => {
    for (let i = 0; i < 30; i += 1) expect((await upload('a.txt', Buffer.from('a'), 'burst')).status).toBe(200);
    expect((await upload('a.txt', Buffer.from('a'), 'burst')).body).toEqual({
      detail: 'Too many room file uploads; try again shortly',
    });
  });
});

describe('room files are swept', () => {
  function makeUpload(root: string, id: string, bytes: number, ageDays: number): string {
    const folder = path.join(root, id);
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, 'f.bin'), Buffer.alloc(bytes));
    const at = (clock.now() - ageDays * 24 * 60 * 60 * 1000) / 1000;
    utimesSync(folder, at, at);
    return folder;
  }

  it('deletes uploads a month old, then the oldest while they pass the total bound; never a folder it did not name', async () => {
    const dir = profileHome('sweep');
    const root = path.join(dir, 'conduit', 'room-files');
    const ids = ['a', 'b', 'c', 'd'].map((letter) => letter.repeat(32));
    makeUpload(root, ids[0] as string, 10, 31);
    makeUpload(root, ids[1] as string, 600, 3);
    makeUpload(root, ids[2] as string, 600, 2);
    makeUpload(root, ids[3] as string, 600, 1);
    makeUpload(root, 'not-ours', 10, 90);
    const removed = await sweepRoomFiles(dir, clock.now(), { ...ROOM_FILE_BOUNDS, maxTotalBytes: 1300 });
    expect(removed).toBe(2);
    expect(readdirSync(root).sort()).toEqual([ids[2], ids[3], 'not-ours'].sort());
  });

  it('runs a minute after start, then hourly, on the service timers, over every profile home', async () => {
    const root = path.join(profileHome('hourly'), 'conduit', 'room-files');
    const first = makeUpload(root, 'e'.repeat(32), 10, 40);
    const pending = timers.waiting;
    let swept = nextSweep();
    timers.advance(60 * 1000);
    await swept;
    expect(existsSync(first)).toBe(false);

    const second = makeUpload(root, 'f'.repeat(32), 10, 40);
    swept = nextSweep();
    // The next sweep is scheduled once the first has finished.
    await timers.untilWaiting(pending);
    timers.advance(60 * 60 * 1000 - 1);
    expect(existsSync(second)).toBe(true);
    timers.advance(1);
    await swept;
    expect(sweeps.slice(-2)).toEqual([1, 1]);
    expect(existsSync(second)).toBe(false);
  });
});

describe('room images', () => {
  const fileKey = (room: string) => createHash('sha256').update(room, 'utf8').digest('hex').slice(0, 32);
  const imagesOf = (name: string) => path.join(profileHome(name), 'conduit', 'room-images');

  it('sets, lists by revision, reads and clears a picture', async () => {
    const put = await call('PUT', '/room-images/room-1?profile=pics', { data_base64: JPEG.toString('base64') });
    expect(put).toMatchObject({ status: 200, body: { ok: true, mime: 'image/jpeg' }, cache: 'no-store' });
    const rev = put.body.rev as string;
    expect(rev).toMatch(/^[0-9a-f]{16}$/);
    expect(await call('GET', '/room-images?profile=pics')).toEqual({
      status: 200,
      body: { ok: true, revisions: { 'room-1': rev } },
      cache: 'no-store',
    });
    expect((await call('GET', '/room-images/room-1?profile=pics')).body).toEqual({
      ok: true,
      rev,
      mime: 'image/jpeg',
      data_base64: JPEG.toString('base64'),
    });
    const png = await call('PUT', '/room-images/room-1?profile=pics', { data_base64: PNG.toString('base64') });
    expect(png.body).toMatchObject({ mime: 'image/png' });
    expect(png.body.rev).not.toBe(rev);
    const stored = readdirSync(imagesOf('pics')).sort();
    expect(stored).toEqual([`${fileKey('room-1')}.img`, `${fileKey('room-1')}.json`]);
    for (const name of stored) expect(statSync(path.join(imagesOf('pics'), name)).mode & 0o777).toBe(0o600);
    expect(statSync(imagesOf('pics')).mode & 0o777).toBe(0o700);

    expect((await call('DELETE', '/room-images/room-1?profile=pics')).body).toEqual({ ok: true, removed: true });
    expect((await call('DELETE', '/room-images/room-1?profile=pics')).body).toEqual({ ok: true, removed: false });
    expect(await call('GET', '/room-images/room-1?profile=pics')).toEqual({
      status: 404,
      body: { detail: 'This room has no picture' },
      cache: 'no-store',
    });
    expect((await call('GET', '/room-images?profile=pics')).body).toEqual({ ok: true, revisions: {} });
  });

  it('accepts only a JPEG or PNG (by its bytes) of up to 512 KB', async () => {
    expect(await call('PUT', '/room-images/r?profile=strict', { data_base64: GIF.toString('base64') })).toEqual({
      status: 415,
      body: { detail: 'The picture must be a JPEG or PNG' },
      cache: 'no-store',
    });
    const big = Buffer.concat([JPEG, Buffer.alloc(512 * 1024)]);
    expect((await call('PUT', '/room-images/r?profile=strict', { data_base64: big.toString('base64') })).body).toEqual({
      detail: 'The picture is larger than 512 KB',
    });
    expect((await call('PUT', '/room-images/r?profile=strict', {})).body).toEqual({
      detail: 'data_base64 is required',
    });
    expect(tree(imagesOf('strict'))).toEqual([]);
  });

  it('keeps at most the bound of rooms, dropping the picture set longest ago', async () => {
    for (const room of ['r1', 'r2', 'r3', 'r4']) {
      clock.advance(1000);
      expect(
        (await call('PUT', `/room-images/${room}?profile=many`, { data_base64: JPEG.toString('base64') })).status,
      ).toBe(200);
    }
    expect(Object.keys((await call('GET', '/room-images?profile=many')).body.revisions as object).sort()).toEqual([
      'r2',
      'r3',
      'r4',
    ]);
    expect(readdirSync(imagesOf('many')).length).toBe(6);
  });

  it('refuses room ids that are paths in any spelling with 400, writing nothing', async () => {
    const refusal = { status: 400, body: { detail: 'Unknown room id' } };
    const data = JSON.stringify({ data_base64: JPEG.toString('base64') });
    for (const target of [
      '/room-images/..%2F..%2F..%2Fescape?profile=ids',
      '/room-images/%2e%2e?profile=ids',
      '/room-images/..%5Cescape?profile=ids',
      '/room-images/%252e%252e%252fescape?profile=ids',
      '/room-images/a%00b?profile=ids',
    ]) {
      expect([target, await rawCall('PUT', target, data)]).toEqual([target, refusal]);
      expect([target, await rawCall('GET', target)]).toEqual([target, refusal]);
    }
    expect(tree(path.join(profileHome('ids'), 'conduit'))).toEqual([]);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('refuses a room-images folder linked outside the home, and never follows a picture planted as a link', async () => {
    const dir = profileHome('pics-linked');
    mkdirSync(path.join(dir, 'conduit'), { recursive: true });
    symlinkSync(outside, path.join(dir, 'conduit', 'room-images'));
    const put = await call('PUT', '/room-images/r?profile=pics-linked', { data_base64: JPEG.toString('base64') });
    expect(put).toMatchObject({
      status: 400,
      body: { detail: 'The conduit/room-images folder leads outside this Hermes home; nothing was written' },
    });
    expect((await call('GET', '/room-images?profile=pics-linked')).status).toBe(400);
    expect(readdirSync(outside)).toEqual([]);

    // A record whose picture was swapped for a link to a secret: the link is not read.
    expect((await call('PUT', '/room-images/r?profile=planted', { data_base64: JPEG.toString('base64') })).status).toBe(
      200,
    );
    const secret = path.join(outside, 'secret.jpg');
    writeFileSync(secret, JPEG);
    const picture = path.join(imagesOf('planted'), `${fileKey('r')}.img`);
    rmSync(picture);
    symlinkSync(secret, picture);
    expect((await call('GET', '/room-images/r?profile=planted')).status).toBe(404);
    // Setting it again replaces the link, not the file it pointed at.
    expect((await call('PUT', '/room-images/r?profile=planted', { data_base64: PNG.toString('base64') })).status).toBe(
      200,
    );
    expect(lstatSync(picture).isSymbolicLink()).toBe(false);
    expect(readFileSync(secret)).toEqual(JPEG);
    rmSync(secret);
  });
});
