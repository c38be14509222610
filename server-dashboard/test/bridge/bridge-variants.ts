import { spawn } from 'node:child_process';
import { hookRunner, type HookRunner } from '../../src/bridge/bridge-script.js';
import { hookCommand } from '../../src/bridge/setup-hermes.js';

/** Both bridges setup-hermes may install: every behaviour case runs against each. */
export const BRIDGE_VARIANTS: readonly HookRunner[] = [
  hookRunner('node', process.execPath),
  hookRunner('sh', '/bin/sh'),
];

export interface BridgeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs a bridge as Hermes does: the command setup-hermes writes, split into argv without a shell,
 * the payload on stdin.
 */
export function runHook(
  runner: HookRunner,
  stateDir: string,
  event: string,
  stdin: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<BridgeRun> {
  const [file, ...args] = hookCommand({ runner, stateDir }, event).split(' ');
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(file!, args, { stdio: ['pipe', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}
