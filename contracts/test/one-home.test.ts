import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * One home per concept (STYLE.md): the suite has one SSE reader, one Hermes API server client and one
 * profile-name pattern, all in contracts. These checks read every workspace's source as text and fail
 * when a second copy appears, naming the file; the fix is to import the shared one. Each fingerprint is
 * also checked against its home, so a fingerprint that no longer finds anything fails here too.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const SOURCE = /\.(?:[cm]?ts|[cm]?js|tsx|jsx)$/;
/** Installed packages, build output and tool folders are not the suite's source. */
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', 'build', 'coverage', 'out']);

interface Rule {
  what: string;
  home: string;
  /** Whether a file's text holds a copy of the concept. */
  copies: (text: string, file: string) => boolean;
}

const RULES: Rule[] = [
  {
    what: 'an SSE (text/event-stream) parser',
    home: 'contracts/src/hermes/sse-reader.ts',
    copies: (text) =>
      // A `data:` line parser: `line.startsWith('data:')` or `/^data:/`.
      /startsWith\(\s*(['"`])data:/.test(text) ||
      /\/\^data:/.test(text) ||
      // A field switch that knows both `data` and `event`.
      (/(?:case\s+|===?\s*)(['"`])data\1/.test(text) && /(?:case\s+|===?\s*)(['"`])event\1/.test(text)),
  },
  {
    what: 'a Hermes API server client (a `/v1/runs` URL built from a base)',
    home: 'contracts/src/hermes/api-client.ts',
    // Tests may call a fake Hermes directly; source may not.
    copies: (text, file) => !/(^|\/)test\/|\.test\.[cm]?ts$/.test(file) && /\}\/v1\/runs\b/.test(text),
  },
  {
    what: 'the profile-name pattern',
    home: 'contracts/src/dashboard/profile.ts',
    copies: (text) => text.includes('[a-z0-9][a-z0-9_-]'),
  },
];

function workspaces(): string[] {
  const root = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] };
  return root.workspaces;
}

function sourceFiles(folder: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || SKIPPED_FOLDERS.has(entry.name)) continue;
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(full));
    else if (entry.isFile() && SOURCE.test(entry.name) && full !== SELF) files.push(full);
  }
  return files;
}

/** The file's text; null when it went away while being read (a generator rewriting its output). */
function textOf(full: string): string | null {
  try {
    return readFileSync(full, 'utf8');
  } catch {
    return null;
  }
}

const files = workspaces()
  .flatMap((workspace) => sourceFiles(path.join(ROOT, workspace)))
  .flatMap((full) => {
    const text = textOf(full);
    return text === null ? [] : [{ file: path.relative(ROOT, full).split(path.sep).join('/'), text }];
  });

describe('one home per concept across the suite', () => {
  it('reads the source of the workspaces that held the copies', () => {
    // Generated workspaces are left out of this check: they may be rewritten while it runs.
    for (const workspace of ['contracts', 'server-dashboard', 'server-voice', 'server-relay', 'e2e']) {
      expect(workspaces()).toContain(workspace);
      expect([workspace, files.some((f) => f.file.startsWith(`${workspace}/`))]).toEqual([workspace, true]);
    }
  });

  for (const rule of RULES) {
    it(`${rule.what} lives only in ${rule.home}`, () => {
      const copies = files.filter((f) => f.file !== rule.home && rule.copies(f.text, f.file)).map((f) => f.file);
      expect(copies, `import the one in ${rule.home} instead`).toEqual([]);
      const home = files.find((f) => f.file === rule.home);
      expect(home && rule.copies(home.text, home.file), `the fingerprint still finds ${rule.home}`).toBe(true);
    });
  }

  it('the SSE fingerprint finds the parsers that used to be copied', () => {
    const [sse] = RULES;
    const oldVoiceReader = `const field = colon < 0 ? line : line.slice(0, colon);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);`;
    const naive = `for (const line of chunk.split('\\n')) if (line.startsWith('data: ')) yield JSON.parse(line.slice(6));`;
    const regexp = `const match = /^data: ?(.*)$/.exec(line);`;
    for (const text of [oldVoiceReader, naive, regexp]) expect([text, sse?.copies(text, 'x.ts')]).toEqual([text, true]);
    // A WAV chunk id is not an SSE field.
    expect(sse?.copies(`} else if (id === 'data') {`, 'x.ts')).toBe(false);
  });
});
