import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('the repository as npm sees it', () => {
  it('npm reads the project configuration without an unknown-config warning', () => {
    // Every `npx …` and `npm run …` in this repository would print the warning on stderr.
    const result = spawnSync('npm', ['pkg', 'get', 'name'], { cwd: REPO, encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/Unknown (project|env|user) config/);
    expect(result.stdout.trim()).toBe('"conduit-suite"');
  });

  it("onnxruntime-node's install script (a CUDA download) is denied, and every other install script is reviewed", () => {
    const manifest = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
      allowScripts?: Record<string, boolean>;
    };
    expect(manifest.allowScripts?.['onnxruntime-node']).toBe(false);
    const listed = spawnSync('npm', ['install-scripts', 'ls'], { cwd: REPO, encoding: 'utf8' });
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout + listed.stderr).toContain('No packages with unreviewed install scripts');
  });
});

describe('a clone of this repository alone', () => {
  it('needs nothing from the shared specification folder beside it: only fixture checks may look there', () => {
    const listed = spawnSync('git', ['grep', '-l', '-E', String.raw`shared/spec/`, '--', '*.ts'], {
      cwd: REPO,
      encoding: 'utf8',
    });
    const readers = listed.stdout.split('\n').filter(Boolean);
    // The fixture modules compare their in-repository copies with the shared ones when present.
    expect(readers.sort()).toEqual(
      [
        'e2e/test/repo-setup.test.ts',
        'server-dashboard/test/fixtures/vectors.ts',
        'server-voice/test/audio/fixture-cases.ts',
      ].sort(),
    );
  });
});
