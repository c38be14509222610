import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LIVEKIT_TOOLSET, ToolsetGate } from '../../src/conference/toolset-gate.js';
import { createLogger } from '../../src/log.js';
import { profileConfigFromText } from '../../src/profile-config.js';

const TOOL = { type: 'function' as const, name: 'lk_0123456789abcdef_camera_snapshot', parameters: { type: 'object' } };

function gateFor(yaml: string | null) {
  const home = mkdtempSync(path.join(tmpdir(), 'toolset-gate-'));
  const file = path.join(home, 'config.yaml');
  if (yaml !== null) writeFileSync(file, yaml, { mode: 0o600 });
  const lines: string[] = [];
  const gate = new ToolsetGate(file, createLogger({ debug: false, write: (line) => lines.push(line) }));
  return { gate, file, lines };
}

describe('the hermes-livekit-tools switch (platform_toolsets.livekit)', () => {
  it('reads the livekit list of the profile, block or flow style', () => {
    expect(gateFor(`platform_toolsets:\n  livekit:\n    - web\n    - ${LIVEKIT_TOOLSET}\n`).gate.enabled()).toBe(true);
    expect(gateFor(`platform_toolsets: {livekit: [${LIVEKIT_TOOLSET}]}\n`).gate.enabled()).toBe(true);
  });

  it('stays off without the entry: another platform’s list, a scalar, a near name, no list, no file, no profile', () => {
    expect(
      gateFor(`platform_toolsets:\n  realtime:\n    - ${LIVEKIT_TOOLSET}\n  livekit: [web]\n`).gate.enabled(),
    ).toBe(false);
    expect(gateFor(`platform_toolsets:\n  livekit: ${LIVEKIT_TOOLSET}\n`).gate.enabled()).toBe(false);
    expect(gateFor(`platform_toolsets:\n  livekit: [hermes-livekit-tool, {name: x}]\n`).gate.enabled()).toBe(false);
    expect(gateFor('toolsets: [hermes-livekit-tools]\n').gate.enabled()).toBe(false);
    expect(gateFor('platform_toolsets: [unclosed\n').gate.enabled()).toBe(false);
    expect(gateFor(null).gate.enabled()).toBe(false);
    expect(new ToolsetGate(null, createLogger({ debug: false, write: () => undefined })).enabled()).toBe(false);
  });

  it('follows the file as it changes, appears or goes away', () => {
    const { gate, file } = gateFor(null);
    expect(gate.enabled()).toBe(false);
    writeFileSync(file, `platform_toolsets:\n  livekit: [${LIVEKIT_TOOLSET}]\n`);
    expect(gate.enabled()).toBe(true);
    writeFileSync(file, `platform_toolsets:\n  livekit: [web, terminal]\n`);
    expect(gate.enabled()).toBe(false);
    writeFileSync(file, `platform_toolsets:\n  livekit: [${LIVEKIT_TOOLSET}, web]\n`);
    expect(gate.enabled()).toBe(true);
    rmSync(file);
    expect(gate.enabled()).toBe(false);
  });

  it('offers everything when on; nothing when off, telling the operator once (nothing to tell without tools)', () => {
    const off = gateFor('platform_toolsets:\n  livekit: [web]\n');
    expect(off.gate.offer([], 'room')).toEqual([]);
    expect(off.lines).toEqual([]);
    expect(off.gate.offer([TOOL], 'room')).toEqual([]);
    expect(off.gate.offer([TOOL], 'room')).toEqual([]);
    expect(off.lines).toHaveLength(1);
    expect(JSON.parse(off.lines[0] ?? '{}')).toMatchObject({
      level: 'warn',
      event: 'remote_tools_hidden',
      room: 'room',
      registered: 1,
      hint: `remote tools are registered but not offered to the model: add hermes-livekit-tools to platform_toolsets.livekit in ${off.file} (the next turn picks it up)`,
    });
    const on = gateFor(`platform_toolsets:\n  livekit: [${LIVEKIT_TOOLSET}]\n`);
    expect(on.gate.offer([TOOL], 'room')).toEqual([TOOL]);
    expect(on.lines).toEqual([]);
  });

  it('the profile reader gives a list’s scalars, and undefined where there is no list', () => {
    const config = profileConfigFromText('a:\n  b: [x, 2, true, null, {c: d}, [e]]\n  s: text\n', '/c.yaml');
    expect(config.list('a.b')).toEqual(['x', 2, true, null]);
    expect(config.list('a.s')).toBeUndefined();
    expect(config.list('a.missing')).toBeUndefined();
    expect(config.list('a.b.0')).toBeUndefined();
    expect(config.list('__proto__')).toBeUndefined();
    // `get` still reads a list as null.
    expect(config.get('a.b')).toBeNull();
  });
});
