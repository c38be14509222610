import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { DesktopSelectionPublisher } from '../../src/notifier/desktop-selection.js';
import {
  DESKTOP_SELECTED_FILE,
  readDesktopSelection,
  SELECTION_TRUST_MS,
  watchedOnDesktop,
} from '../../src/notifier/desktop-watch.js';

let home: string;
beforeEach(() => {
  home = mkdtempSync(path.join(os.tmpdir(), 'conduit-desktop-'));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

function publish(content: string, ageMs = 0): number {
  const file = path.join(home, DESKTOP_SELECTED_FILE);
  writeFileSync(file, content, { mode: 0o600 });
  const at = new Date(Date.now() - ageMs);
  utimesSync(file, at, at);
  return Date.now();
}

describe('the Desktop selection file', () => {
  it('a fresh file lists the selected chats', async () => {
    const now = publish(JSON.stringify({ version: 1, sessions: ['a', 'b'] }));
    expect(await readDesktopSelection(home, now)).toEqual(new Set(['a', 'b']));
  });

  it('is trusted for 45 seconds after its last write, so a stopped publisher quiets nothing', async () => {
    expect(SELECTION_TRUST_MS).toBe(45_000);
    const now = publish(JSON.stringify({ version: 1, sessions: ['a'] }), SELECTION_TRUST_MS + 5_000);
    expect(await readDesktopSelection(home, now)).toBeNull();
    expect(await readDesktopSelection(home, now - 10_000)).toEqual(new Set(['a']));
  });

  it.each([
    ['not JSON', '{"version":1,'],
    ['another version', JSON.stringify({ version: 2, sessions: ['a'] })],
    ['no list', JSON.stringify({ version: 1, sessions: 'a' })],
    ['too large', JSON.stringify({ version: 1, sessions: ['a'], pad: 'x'.repeat(300 * 1024) })],
  ])('a file that is %s is no selection', async (_name, content) => {
    const now = publish(content);
    expect(await readDesktopSelection(home, now)).toBeNull();
  });

  it('no file is no selection', async () => {
    expect(await readDesktopSelection(home, Date.now())).toBeNull();
  });
});

describe('watchedOnDesktop', () => {
  const selection = new Set(['chat']);
  it.each([
    ['selected, 2 minutes exactly', 'chat', 0, 120_000, selection, true],
    ['selected, past 2 minutes', 'chat', 0, 120_001, selection, false],
    ['not selected', 'other', 0, 1_000, selection, false],
    ['no start time', 'chat', undefined, 1_000, selection, false],
    ['no selection', 'chat', 0, 1_000, null, false],
  ] as const)('%s', (_name, sid, start, reply, sel, expected) => {
    expect(watchedOnDesktop(sid, start, reply, sel)).toBe(expected);
  });
});

describe('publishing the selection', () => {
  it('writes on every change, renews while anything is selected, and each home gets only its chats', async () => {
    const other = mkdtempSync(path.join(os.tmpdir(), 'conduit-desktop-'));
    const publisher = new DesktopSelectionPublisher(silentLogger, 100);
    const file = path.join(home, DESKTOP_SELECTED_FILE);
    const read = (at: string) => JSON.parse(readFileSync(path.join(at, DESKTOP_SELECTED_FILE), 'utf8')) as object;
    publisher.select(1, home, 'a');
    publisher.select(2, home, 'b');
    publisher.select(3, other, 'c');
    await publisher.settled();
    expect([read(home), read(other)]).toEqual([
      { version: 1, sessions: ['a', 'b'] },
      { version: 1, sessions: ['c'] },
    ]);
    const old = new Date(Date.now() - 20_000);
    utimesSync(file, old, old);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await publisher.settled();
    expect(Date.now() - statSync(file).mtimeMs).toBeLessThan(5_000); // renewed
    publisher.select(1, other, 'a'); // socket 1 moved to the other profile's chat
    publisher.closed(2);
    await publisher.settled();
    expect([read(home), read(other)]).toEqual([
      { version: 1, sessions: [] },
      { version: 1, sessions: ['a', 'c'] },
    ]);
    publisher.stop();
    rmSync(other, { recursive: true, force: true });
  });
});
