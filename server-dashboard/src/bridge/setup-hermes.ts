import { existsSync, statSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, isSeq, parseDocument, YAMLMap, YAMLSeq, type Document } from 'yaml';
import { z } from 'zod';
import { bridgeScriptPath } from './bridge-script.js';
import { BRIDGED_HOOKS } from './hook-payload.js';

/** Marks our hook entries: any command that runs the bridge script is ours, whatever its path. */
const BRIDGE_MARKER = 'conduit-hook.mjs';
/** Hermes' maximum shell-hook timeout; a held clarify call needs all of it. */
const HELD_TIMEOUT_S = 300;
const EVENT_TIMEOUT_S = 15;

export interface SetupOptions {
  /** The profile's home (where config.yaml and the shell-hook allowlist live). */
  profileHome: string;
  /** The service's state folder, where the bridge finds the running service. */
  stateDir: string;
  /** Absolute path of the bridge script. */
  bridgeScript: string;
  /** The node binary Hermes should run (absolute, so Hermes' PATH does not matter). */
  nodePath: string;
  remove: boolean;
  now: Date;
}

export function hookCommand(
  options: Pick<SetupOptions, 'nodePath' | 'bridgeScript' | 'stateDir'>,
  event: string,
): string {
  // Hermes splits the command into argv without a shell, so paths with spaces are not supported.
  return `${options.nodePath} ${options.bridgeScript} --state ${options.stateDir} ${event}`;
}

function isOurs(item: unknown): boolean {
  if (!isMap(item)) return false;
  const command = item.get('command');
  return typeof command === 'string' && command.includes(BRIDGE_MARKER);
}

/** Edits the document in place; returns whether anything changed. */
export function applyHooks(doc: Document, options: SetupOptions): boolean {
  const before = doc.toString();
  let hooks = doc.get('hooks');
  if (!isMap(hooks)) {
    if (options.remove) return false;
    hooks = new YAMLMap();
    doc.set('hooks', hooks);
  }
  const hookMap = hooks as YAMLMap;
  for (const event of BRIDGED_HOOKS) {
    let list = hookMap.get(event);
    if (!isSeq(list)) {
      if (options.remove) continue;
      list = new YAMLSeq();
      hookMap.set(event, list);
    }
    const seq = list as YAMLSeq;
    seq.items = seq.items.filter((item) => !isOurs(item));
    if (!options.remove) {
      const entry: Record<string, unknown> = {};
      // Only clarify needs the tool hooks; a matcher keeps every other tool call free of the bridge.
      if (event === 'pre_tool_call' || event === 'post_tool_call') entry.matcher = 'clarify';
      entry.command = hookCommand(options, event);
      entry.timeout = event === 'pre_tool_call' ? HELD_TIMEOUT_S : EVENT_TIMEOUT_S;
      entry.fail_closed = false;
      seq.items.push(doc.createNode(entry));
    } else if (seq.items.length === 0) {
      hookMap.delete(event);
    }
  }
  if (options.remove && hookMap.items.length === 0) doc.delete('hooks');
  return doc.toString() !== before;
}

const allowlistSchema = z.looseObject({
  approvals: z.array(z.looseObject({ event: z.string(), command: z.string() })).default([]),
});

async function writePrivate(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, text, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
}

/**
 * Consent: Hermes runs a shell hook non-interactively only when it is in the profile's
 * shell-hooks-allowlist.json, so setup records our commands there (and --remove takes them out).
 */
export async function applyConsent(options: SetupOptions): Promise<void> {
  const file = path.join(options.profileHome, 'shell-hooks-allowlist.json');
  let current: z.infer<typeof allowlistSchema> = { approvals: [] };
  if (existsSync(file)) {
    const parsed = allowlistSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
    if (!parsed.success) throw new Error(`${file} is not a valid allowlist; left unchanged`);
    current = parsed.data;
  }
  const approvals = current.approvals.filter((a) => !a.command.includes(BRIDGE_MARKER));
  if (!options.remove) {
    const mtime = statSync(options.bridgeScript).mtimeMs / 1000;
    for (const event of BRIDGED_HOOKS) {
      approvals.push({
        event,
        command: hookCommand(options, event),
        approved_at: options.now.toISOString(),
        script_mtime_at_approval: mtime,
      });
    }
  }
  await writePrivate(file, JSON.stringify({ ...current, approvals }, null, 2) + '\n');
}

export async function setupHermes(options: SetupOptions): Promise<{ configFile: string; changed: boolean }> {
  const configFile = path.join(options.profileHome, 'config.yaml');
  const text = existsSync(configFile) ? await readFile(configFile, 'utf8') : '';
  const doc = parseDocument(text, { keepSourceTokens: true });
  if (doc.errors.length) throw new Error(`${configFile} is not valid YAML; left unchanged`);
  if (doc.contents !== null && !isMap(doc.contents)) throw new Error(`${configFile} is not a mapping; left unchanged`);
  const changed = applyHooks(doc, options);
  if (changed) await writePrivate(configFile, doc.toString());
  await applyConsent(options);
  return { configFile, changed };
}

function usage(): string {
  return 'usage: conduit setup-hermes [--profile NAME] [--home DIR] [--state DIR] [--remove]\n';
}

/** `conduit setup-hermes --profile NAME [--remove]` */
export async function run(argv: string[]): Promise<number> {
  let profile = '';
  let home = process.env.HERMES_HOME?.trim() || path.join(os.homedir(), '.hermes');
  let stateDir = '';
  let remove = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--profile') profile = argv[++i] ?? '';
    else if (arg === '--home') home = argv[++i] ?? '';
    else if (arg === '--state') stateDir = argv[++i] ?? '';
    else if (arg === '--remove') remove = true;
    else {
      process.stderr.write(usage());
      return 2;
    }
  }
  home = path.resolve(home);
  stateDir = path.resolve(stateDir || process.env.CONDUIT_STATE_DIR?.trim() || path.join(home, 'conduit-host'));
  if (profile && profile !== 'default' && !/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(profile)) {
    process.stderr.write(`Invalid profile name: ${profile}\n`);
    return 2;
  }
  const profileHome = !profile || profile === 'default' ? home : path.join(home, 'profiles', profile);
  if (!existsSync(profileHome)) {
    process.stderr.write(`No Hermes profile home at ${profileHome}\n`);
    return 1;
  }
  const { configFile, changed } = await setupHermes({
    profileHome,
    stateDir,
    bridgeScript: fileURLToPath(bridgeScriptPath()),
    nodePath: process.execPath,
    remove,
    now: new Date(),
  });
  const what = remove ? 'Removed the Conduit hooks from' : 'Wrote the Conduit hooks into';
  process.stdout.write(`${changed ? what : 'Already up to date:'} ${configFile}\n`);
  if (!remove) process.stdout.write('Restart the Hermes gateway so it loads the hooks.\n');
  return 0;
}
