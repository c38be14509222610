import { lstat, mkdir, readdir, readFile, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, isScalar, isSeq, YAMLMap, YAMLSeq, type Document } from 'yaml';
import { writeFileAtomic } from '../credentials/atomic-write.js';
import { readPackageVersion } from '../package-version.js';

/**
 * The Hermes plugin `conduit setup-hermes` writes so the commands the seed tells users to type
 * (`hermes conduit-push pair|status|test|redact|unpair`, `hermes -p coder conduit-push …`) run this
 * package's `conduit push …`. Hermes (hermes-agent, hermes_cli/plugins.py) imports
 * `<profile home>/plugins/<name>/__init__.py` and calls its `register(ctx)` only when the name is in
 * config.yaml `plugins.enabled`; `ctx.register_cli_command(name, help, setup_fn, handler_fn,
 * description)` makes `hermes <name> …` a subcommand whose handler gets the parsed argparse namespace.
 * `hermes -p NAME` has already set HERMES_HOME to that profile's home before any plugin loads, so the
 * shim hands Hermes' home to the CLI, which resolves the profile from it as it does for hooks.
 *
 * The plugin is named `conduit_push`, the reference plugin's name, so the seed's `hermes -p coder
 * plugins enable conduit_push` names it too, and so the reference plugin and this shim can never both
 * register `conduit-push`: a `conduit_push` folder that is not ours stops setup instead.
 */
export const CLI_SHIM_PLUGIN = 'conduit_push';
export const CLI_SHIM_COMMAND = 'conduit-push';

/** Marks both files as ours: only a folder holding nothing else is rewritten or removed. */
const MARKER = 'installed by conduit setup-hermes; rewritten on each run';
const SHIM_FILES: readonly string[] = ['plugin.yaml', '__init__.py'];

export function cliShimDir(profileHome: string): string {
  return path.join(profileHome, 'plugins', CLI_SHIM_PLUGIN);
}

/** This package's `conduit` CLI as Hermes runs it: absolute node and bin/conduit.mjs, so Hermes' PATH does not matter. */
export function conduitCommand(nodePath: string): string[] {
  return [nodePath, fileURLToPath(new URL('../../bin/conduit.mjs', import.meta.url))];
}

/**
 * plugin.yaml and __init__.py for one command prefix. JSON strings are valid YAML and valid Python
 * literals, so paths with quotes or backslashes cannot break either file. Nothing secret goes in.
 */
export function cliShimFiles(command: readonly string[], version: string): Record<string, string> {
  const manifest = `# ${MARKER}
name: ${CLI_SHIM_PLUGIN}
manifest_version: 1
version: ${JSON.stringify(version)}
description: ${JSON.stringify(`hermes ${CLI_SHIM_COMMAND} … runs the Conduit host's conduit push for this profile`)}
author: Conduit
kind: standalone
`;
  const init = `# ${MARKER}
"""\`hermes ${CLI_SHIM_COMMAND} ...\`: the Conduit host's \`conduit push ...\` for the profile Hermes runs as."""
import argparse
import os
import subprocess
import sys

CONDUIT = ${JSON.stringify(command)}


def _setup(parser):
    # Everything after \`conduit-push\` goes to the CLI as typed; it parses and answers for itself.
    parser.add_argument(
        "conduit_push_argv", nargs=argparse.REMAINDER, metavar="{pair|status|test|redact|unpair} ..."
    )


def _run(args):
    env = dict(os.environ)
    try:
        from hermes_constants import get_hermes_home

        env["HERMES_HOME"] = str(get_hermes_home())
    except Exception:
        pass  # HERMES_HOME as \`hermes -p\` left it
    sys.stdout.flush()
    sys.stderr.flush()
    code = subprocess.call([*CONDUIT, "push", *args.conduit_push_argv], env=env)
    code = 128 - code if code < 0 else code  # killed by a signal: the shell's 128 + N
    if code:
        raise SystemExit(code)  # older Hermes ignores a handler's return value
    return 0


def register(ctx):
    ctx.register_cli_command(
        name=${JSON.stringify(CLI_SHIM_COMMAND)},
        help="Pair and test Conduit notifications for this profile",
        setup_fn=_setup,
        handler_fn=_run,
        description="Runs the Conduit host's conduit push command: pair CODE, status, test, redact on|off, unpair.",
    )
`;
  return { 'plugin.yaml': manifest, '__init__.py': init };
}

export type CliShimState = 'absent' | 'ours' | 'foreign';

/**
 * Whether the plugin folder is free, ours (our two marked files, and the bytecode Python leaves), or
 * holds anything else: another `conduit_push` (the reference plugin), a symlinked one, a user's file.
 */
export async function cliShimState(profileHome: string): Promise<CliShimState> {
  const dir = cliShimDir(profileHome);
  const stat = await lstat(dir).catch(() => null);
  if (!stat) return 'absent';
  if (!stat.isDirectory()) return 'foreign';
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name === '__pycache__' && entry.isDirectory()) continue;
    if (!entry.isFile() || !SHIM_FILES.includes(entry.name)) return 'foreign';
    const text = await readFile(path.join(dir, entry.name), 'utf8');
    if (!text.startsWith(`# ${MARKER}\n`)) return 'foreign';
  }
  return 'ours';
}

export function foreignCliShimError(profileHome: string): Error {
  return new Error(
    `${cliShimDir(profileHome)} holds a plugin that is not the Conduit host's (the ${CLI_SHIM_PLUGIN} Python plugin?); ` +
      `left unchanged. Remove it (hermes plugins remove ${CLI_SHIM_PLUGIN}) so \`hermes ${CLI_SHIM_COMMAND}\` runs this host, then run setup-hermes again.`,
  );
}

/** Writes the plugin (0600 files in a 0700 folder); unchanged files are left as they are. */
export async function installCliShim(
  profileHome: string,
  command: readonly string[],
): Promise<'installed' | 'unchanged'> {
  if ((await cliShimState(profileHome)) === 'foreign') throw foreignCliShimError(profileHome);
  const dir = cliShimDir(profileHome);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  let result: 'installed' | 'unchanged' = 'unchanged';
  for (const [name, text] of Object.entries(cliShimFiles(command, readPackageVersion() ?? '0.0.0'))) {
    const file = path.join(dir, name);
    if ((await readFile(file, 'utf8').catch(() => null)) === text) continue;
    await writeFileAtomic(file, text);
    result = 'installed';
  }
  return result;
}

/** Removes the plugin folder when it is ours; anything else there is left alone. */
export async function removeCliShim(profileHome: string): Promise<void> {
  if ((await cliShimState(profileHome)) !== 'ours') return;
  const dir = cliShimDir(profileHome);
  await rm(path.join(dir, '__pycache__'), { recursive: true, force: true });
  for (const name of SHIM_FILES) await rm(path.join(dir, name), { force: true });
  await rmdir(dir).catch(() => undefined); // only when empty
}

function hasName(item: unknown): boolean {
  return (isScalar(item) ? item.value : item) === CLI_SHIM_PLUGIN;
}

/** A list under `plugins`, created when asked; anything but a list there is refused. */
function pluginList(plugins: YAMLMap, key: string, create: boolean): YAMLSeq | null {
  const list = plugins.get(key);
  if (isSeq(list)) return list;
  if (list !== undefined && list !== null) throw new Error(`plugins.${key} is not a list; left unchanged`);
  if (!create) return null;
  const seq = new YAMLSeq();
  plugins.set(key, seq);
  return seq;
}

/** Takes our name out of a list; a list left empty goes too, so setup then --remove leaves config.yaml as it was. */
function dropName(plugins: YAMLMap, key: string): void {
  const list = pluginList(plugins, key, false);
  if (!list?.items.some(hasName)) return;
  list.items = list.items.filter((item) => !hasName(item));
  if (list.items.length === 0) plugins.delete(key);
}

/**
 * `plugins.enabled` gets `conduit_push` (Hermes loads a user plugin only when listed there) and
 * `plugins.disabled` loses it, as `hermes plugins enable` does: the deny-list wins over the allow-list,
 * and running setup is asking for the command. --remove takes it out of `enabled`. Only what differs
 * is touched, so a second run leaves the document as it was. Edits the document in place.
 */
export function applyCliShimEnablement(doc: Document, remove: boolean): void {
  let plugins = doc.get('plugins');
  if (!isMap(plugins)) {
    if (plugins !== undefined && plugins !== null) throw new Error('plugins is not a mapping; left unchanged');
    if (remove) return;
    plugins = new YAMLMap();
    doc.set('plugins', plugins);
  }
  const pluginMap = plugins as YAMLMap;
  if (remove) {
    dropName(pluginMap, 'enabled');
  } else {
    const enabled = pluginList(pluginMap, 'enabled', true) as YAMLSeq;
    if (!enabled.items.some(hasName)) enabled.items.push(doc.createNode(CLI_SHIM_PLUGIN));
    dropName(pluginMap, 'disabled');
  }
  if (pluginMap.items.length === 0) doc.delete('plugins');
}
