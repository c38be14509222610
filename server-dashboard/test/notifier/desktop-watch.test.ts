import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
