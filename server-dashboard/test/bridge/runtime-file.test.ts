import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeRuntimeFile, writeRuntimeFile } from '../../src/bridge/runtime-file.js';

let stateDir: string;
beforeEach(() => {
  stateDir = path.join(mkdtempSync(path.join(os.tmpdir(), 'conduit-runtime-')), 'state');
});
afterEach(() => rmSync(path.dirname(stateDir), { recursive: true, force: true }));

describe('the runtime files the bridges read', () => {
  it('writes runtime.json and the curl config (URL and token header), both 0600 in a 0700 folder; removal takes both', async () => {
    await writeRuntimeFile(stateDir, { url: 'http://127.0.0.1:4321', token: 'tok_en-123', pid: 7 });
    expect(statSync(stateDir).mode & 0o777).toBe(0o700);
    for (const name of ['runtime.json', 'runtime.curl']) {
      expect(statSync(path.join(stateDir, name)).mode & 0o777).toBe(0o600);
    }
    expect(JSON.parse(readFileSync(path.join(stateDir, 'runtime.json'), 'utf8'))).toEqual({
      url: 'http://127.0.0.1:4321',
      token: 'tok_en-123',
      pid: 7,
    });
    const curl = readFileSync(path.join(stateDir, 'runtime.curl'), 'utf8');
    expect(curl).toContain('url = "http://127.0.0.1:4321/_conduit/hook"\n');
    expect(curl).toContain('header = "x-conduit-hook-token: tok_en-123"\n');
    await removeRuntimeFile(stateDir);
    expect(existsSync(path.join(stateDir, 'runtime.json'))).toBe(false);
    expect(existsSync(path.join(stateDir, 'runtime.curl'))).toBe(false);
  });

  it('escapes quotes and backslashes for curl and refuses a line break, which would start a new option', async () => {
    await writeRuntimeFile(stateDir, { url: 'http://127.0.0.1:1', token: 'a"b\\c', pid: 1 });
    expect(readFileSync(path.join(stateDir, 'runtime.curl'), 'utf8')).toContain(
      'header = "x-conduit-hook-token: a\\"b\\\\c"\n',
    );
    await expect(
      writeRuntimeFile(stateDir, { url: 'http://127.0.0.1:1', token: 'x\nurl = "http://evil"', pid: 1 }),
    ).rejects.toThrow(/line break/);
  });
});
