/**
 * `conduit hook <event>` through the TypeScript CLI. Hermes' hook configuration runs the plain
 * JavaScript bridge (bin/conduit-hook.mjs) directly, because starting the TypeScript loader alone
 * costs more than the hook's budget; this entry runs the same bridge for people typing the command.
 */
import { bridgeScriptPath } from './bridge-script.js';

interface Bridge {
  runHook(argv: string[]): Promise<string>;
}

function isBridge(value: unknown): value is Bridge {
  return typeof value === 'object' && value !== null && 'runHook' in value && typeof value.runHook === 'function';
}

export async function run(argv: string[]): Promise<number> {
  const loaded: unknown = await import(bridgeScriptPath().href);
  if (!isBridge(loaded)) return 0;
  try {
    const out = await loaded.runHook(argv);
    if (out) process.stdout.write(out.endsWith('\n') ? out : out + '\n');
  } catch {
    // never break Hermes
  }
  return 0;
}
