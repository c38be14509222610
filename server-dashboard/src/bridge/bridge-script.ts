import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The two hook bridges shipped with this workspace. Both forward Hermes' hook JSON to the running
 * service and follow the same rules; the sh one (sh + curl, a few ms to start) is installed where
 * curl exists, the Node one (60-90 ms to start on a small machine) everywhere else.
 */
export type BridgeKind = 'sh' | 'node';

const SCRIPTS: Record<BridgeKind, string> = { sh: 'conduit-hook.sh', node: 'conduit-hook.mjs' };

export function bridgeScriptPath(kind: BridgeKind = 'node'): URL {
  return new URL(`../../bin/${SCRIPTS[kind]}`, import.meta.url);
}

/** Every bridge's file name: a hook command naming one of them is ours, whatever its folder. */
export const BRIDGE_SCRIPT_NAMES: readonly string[] = Object.values(SCRIPTS);

/** How Hermes runs the bridge: an absolute interpreter and script, so Hermes' PATH does not matter. */
export interface HookRunner {
  kind: BridgeKind;
  interpreter: string;
  script: string;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable `name` on a PATH-style list, or null. */
export function findOnPath(name: string, pathList: string | undefined): string | null {
  for (const dir of (pathList ?? '').split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

export function hookRunner(kind: BridgeKind, interpreter: string): HookRunner {
  return { kind, interpreter, script: fileURLToPath(bridgeScriptPath(kind)) };
}

/**
 * The bridge setup-hermes installs: sh when curl and /bin/sh are here at setup time, else Node.
 * `preferNode` forces the Node bridge (`conduit setup-hermes --node-hook`).
 */
export function chooseHookRunner(options: { pathList: string | undefined; nodePath: string; preferNode?: boolean }): {
  runner: HookRunner;
  curl: string | null;
} {
  const curl = findOnPath('curl', options.pathList);
  if (!options.preferNode && curl && isExecutable('/bin/sh')) return { runner: hookRunner('sh', '/bin/sh'), curl };
  return { runner: hookRunner('node', options.nodePath), curl };
}
