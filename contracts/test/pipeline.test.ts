import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { MESSENGER_SHA256, messengerSnapshotPath, verifyMessengerSnapshot } from '../scripts/contracts.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const script = path.join(repoRoot, 'contracts/scripts/contracts.ts');
// Inside contracts/ so the copy resolves zod from this workspace's node_modules.
const scratch = mkdtempSync(path.join(repoRoot, 'contracts', '.check-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function runCheck(contractsDir?: string) {
  const args = ['tsx', script, 'check', ...(contractsDir ? ['--contracts', contractsDir] : [])];
  return spawnSync('npx', args, { cwd: repoRoot, encoding: 'utf8' });
}

describe('contracts:check', () => {
  it('passes when the committed snapshots match the contracts', () => {
    const result = runCheck();
    expect(result.stderr).not.toContain('failed');
    expect(result.status).toBe(0);
  });

  it('fails with a readable diff when a contract field changes without regeneration', () => {
    const copy = path.join(scratch, 'src');
    cpSync(path.join(repoRoot, 'contracts/src'), copy, { recursive: true });
    const file = path.join(copy, 'relay/health.ts');
    const source = readFileSync(file, 'utf8');
    expect(source).toContain('ok: z.literal(true)');
    writeFileSync(file, source.replace('ok: z.literal(true)', 'healthy: z.literal(true)'));
    const result = runCheck(copy);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('drift: contracts/openapi/relay.openapi.json');
    expect(result.stderr).toContain('drift: generated/relay/schema.ts');
    expect(result.stderr).toMatch(/^\+.*"healthy"/m);
  });
});

describe('the vendored Relay messenger contract', () => {
  it('is byte-exact with its pinned SHA-256', () => {
    expect(() => verifyMessengerSnapshot(messengerSnapshotPath(repoRoot))).not.toThrow();
    expect(MESSENGER_SHA256).toBe('57c553a8b0d281ed5e815fc08184285315fcf9a85bedde92628f3ed33235b15d');
  });

  it('a changed byte fails the pin', () => {
    const copy = path.join(scratch, 'openapi.yaml');
    writeFileSync(copy, readFileSync(messengerSnapshotPath(repoRoot), 'utf8') + ' ');
    expect(() => verifyMessengerSnapshot(copy)).toThrow(/SHA-256/);
  });

  it('generates a client whose 36 paths are typed', async () => {
    const schema = readFileSync(path.join(repoRoot, 'generated/relay-messenger/schema.ts'), 'utf8');
    const pathBlock = schema.slice(schema.indexOf('export interface paths'), schema.indexOf('export type webhooks'));
    const paths = pathBlock.match(/^ {4}"\/[^"]*": \{/gm) ?? [];
    expect(paths).toHaveLength(36);
  });
});
