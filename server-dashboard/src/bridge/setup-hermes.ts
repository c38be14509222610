import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isMap, isSeq, parseDocument, YAMLMap, YAMLSeq, type Document } from 'yaml';
import { z } from 'zod';
import { isProfileName } from '@conduit/contracts/dashboard/profile';
import { writeFileAtomic } from '../credentials/atomic-write.js';
import { MCP_PATH, MCP_SERVER_NAME } from '../mcp/mcp-endpoint.js';
import { readOrCreateMcpToken } from '../mcp/mcp-token.js';
import { BRIDGE_SCRIPT_NAMES, chooseHookRunner, type HookRunner } from './bridge-script.js';
import { BRIDGED_HOOKS } from './hook-payload.js';
import { callingSkill } from '../features/calls/calling-skill.js';
import { readingHealthSkill } from '../features/health/reading-health-skill.js';
import { usingLocationSkill } from '../features/location/using-location-skill.js';
import { usingCalendarSkill } from '../features/phone/using-calendar-skill.js';
import { installSkill, removeSkill, type ConduitSkill } from '../kernel/hermes-skills.js';
import {
  applyCliShimEnablement,
  cliShimDir,
  cliShimState,
  conduitCommand,
  foreignCliShimError,
  installCliShim,
  removeCliShim,
} from './hermes-cli-shim.js';

/** Any command that runs one of the bridge scripts is ours, whatever its path or interpreter. */
function isOurCommand(command: string): boolean {
  return BRIDGE_SCRIPT_NAMES.some((name) => command.includes(name));
}

/**
 * The skills the conduit tools' descriptions point to, installed with the hooks. Each is installed
 * whether or not its tool is offered yet (conduit_health shows only once a phone syncs), so the skill
 * is there the moment the tool is.
 */
export const CONDUIT_SKILLS: readonly ConduitSkill[] = [
  callingSkill,
  readingHealthSkill,
  usingLocationSkill,
  usingCalendarSkill,
];

/** Hermes' maximum shell-hook timeout; a held clarify call needs all of it. */
const HELD_TIMEOUT_S = 300;
const EVENT_TIMEOUT_S = 15;

export interface SetupOptions {
  /** The profile's home (where config.yaml and the shell-hook allowlist live). */
  profileHome: string;
  /** The service's state folder, where the bridge finds the running service. */
  stateDir: string;
  /** The bridge Hermes runs (sh + curl, or Node). */
  runner: HookRunner;
  /** The `mcp_servers` entry to write (the service's MCP URL and token); unused by --remove. */
  mcp: { url: string; token: string };
  /** How `hermes conduit-push` runs this package's `conduit` CLI; by default this node and bin/conduit.mjs. */
  conduitCommand?: readonly string[];
  remove: boolean;
  now: Date;
}

export function hookCommand(options: Pick<SetupOptions, 'runner' | 'stateDir'>, event: string): string {
  // Hermes splits the command into argv without a shell, so paths with spaces are not supported.
  return `${options.runner.interpreter} ${options.runner.script} --state ${options.stateDir} ${event}`;
}

function isOurs(item: unknown): boolean {
  if (!isMap(item)) return false;
  const command = item.get('command');
  return typeof command === 'string' && isOurCommand(command);
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
      // pre_tool_call sees every tool call (a tool start is Lock Screen progress; clarify is held for
      // the phone's answer; the Conduit tools that need their calling turn get it signed in). Only
      // clarify needs post_tool_call; a matcher keeps every other tool's end free of the bridge.
      if (event === 'post_tool_call') entry.matcher = 'clarify';
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

/** The service's MCP URL for one profile (`?profile=` picks the profile the tools act on). */
export function mcpUrl(port: number, profile: string): string {
  const url = new URL(MCP_PATH, `http://127.0.0.1:${port}`);
  if (profile && profile !== 'default') url.searchParams.set('profile', profile);
  return url.href;
}

function isOurMcpEntry(entry: unknown): boolean {
  if (!isMap(entry)) return false;
  const url = entry.get('url');
  return typeof url === 'string' && url.includes(MCP_PATH);
}

/**
 * `mcp_servers.conduit`: the service's MCP endpoint with its bearer token. Keys the user added to our
 * entry (enabled, timeout, tools filters) stay; an entry named `conduit` that is not ours is refused.
 * Edits the document in place.
 */
export function applyMcp(doc: Document, options: SetupOptions): void {
  let servers = doc.get('mcp_servers');
  if (!isMap(servers)) {
    if (options.remove) return;
    if (servers !== undefined && servers !== null) throw new Error('mcp_servers is not a mapping; left unchanged');
    servers = new YAMLMap();
    doc.set('mcp_servers', servers);
  }
  const serverMap = servers as YAMLMap;
  const current = serverMap.get(MCP_SERVER_NAME);
  if (current !== undefined && !isOurMcpEntry(current)) {
    if (options.remove) return;
    throw new Error(`mcp_servers.${MCP_SERVER_NAME} is not the Conduit host's entry; left unchanged`);
  }
  if (options.remove) {
    if (current === undefined) return;
    serverMap.delete(MCP_SERVER_NAME);
    if (serverMap.items.length === 0) doc.delete('mcp_servers');
    return;
  }
  if (!isMap(current)) {
    serverMap.set(MCP_SERVER_NAME, doc.createNode({ url: options.mcp.url }));
  }
  const entry = serverMap.get(MCP_SERVER_NAME) as YAMLMap;
  // Set only what differs, so a second run leaves the document (and its formatting) as it was.
  if (entry.get('url') !== options.mcp.url) entry.set('url', options.mcp.url);
  let headers = entry.get('headers');
  if (!isMap(headers)) {
    headers = new YAMLMap();
    entry.set('headers', headers);
  }
  const bearer = `Bearer ${options.mcp.token}`;
  if ((headers as YAMLMap).get('Authorization') !== bearer) (headers as YAMLMap).set('Authorization', bearer);
}

const allowlistSchema = z.looseObject({
  approvals: z.array(z.looseObject({ event: z.string(), command: z.string() })).default([]),
});

/**
 * A file's mtime as Hermes records it in `script_mtime_at_approval` (agent/shell_hooks.py: Python's
 * `datetime.fromtimestamp(getmtime(path), tz=utc).isoformat()` with `+00:00` as `Z`), so `hermes hooks
 * doctor` sees the script unchanged since approval. Hermes takes the command's first part with a script
 * extension (`.sh`, `.mjs`) as the script, which is our bridge for both interpreters.
 */
export function hermesMtime(file: string): string {
  const seconds = Number(statSync(file).mtimeMs) / 1000;
  let whole = Math.floor(seconds);
  let micros = Math.round((seconds - whole) * 1_000_000);
  if (micros === 1_000_000) {
    whole += 1;
    micros = 0;
  }
  const base = new Date(whole * 1000).toISOString().slice(0, 19);
  return micros === 0 ? `${base}Z` : `${base}.${String(micros).padStart(6, '0')}Z`;
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
  const approvals = current.approvals.filter((a) => !isOurCommand(a.command));
  if (!options.remove) {
    const mtime = hermesMtime(options.runner.script);
    for (const event of BRIDGED_HOOKS) {
      approvals.push({
        event,
        command: hookCommand(options, event),
        approved_at: options.now.toISOString(),
        script_mtime_at_approval: mtime,
      });
    }
  }
  await writeFileAtomic(file, JSON.stringify({ ...current, approvals }, null, 2) + '\n');
}

export async function setupHermes(options: SetupOptions): Promise<{ configFile: string; changed: boolean }> {
  const configFile = path.join(options.profileHome, 'config.yaml');
  const text = existsSync(configFile) ? await readFile(configFile, 'utf8') : '';
  const doc = parseDocument(text, { keepSourceTokens: true });
  if (doc.errors.length) throw new Error(`${configFile} is not valid YAML; left unchanged`);
  if (doc.contents !== null && !isMap(doc.contents)) throw new Error(`${configFile} is not a mapping; left unchanged`);
  // Checked before anything is written; --remove leaves a plugin that is not ours, and its enablement, alone.
  const shim = await cliShimState(options.profileHome);
  if (shim === 'foreign' && !options.remove) throw foreignCliShimError(options.profileHome);
  const before = doc.toString();
  applyHooks(doc, options);
  applyMcp(doc, options);
  if (!options.remove || shim === 'ours') applyCliShimEnablement(doc, options.remove);
  let changed = doc.toString() !== before;
  if (changed) await writeFileAtomic(configFile, doc.toString());
  await applyConsent(options);
  for (const skill of CONDUIT_SKILLS) {
    if (options.remove) await removeSkill(options.profileHome, skill.name);
    else changed = (await installSkill(options.profileHome, skill)) === 'installed' || changed;
  }
  // The plugin behind `hermes conduit-push …`.
  if (options.remove) await removeCliShim(options.profileHome);
  else {
    const command = options.conduitCommand ?? conduitCommand(process.execPath);
    changed = (await installCliShim(options.profileHome, command)) === 'installed' || changed;
  }
  return { configFile, changed };
}

function usage(): string {
  return 'usage: conduit setup-hermes [--profile NAME] [--home DIR] [--state DIR] [--port N] [--node-hook] [--remove]\n';
}

/** `conduit setup-hermes --profile NAME [--remove]` */
export async function run(argv: string[]): Promise<number> {
  let profile = '';
  let home = process.env.HERMES_HOME?.trim() || path.join(os.homedir(), '.hermes');
  let stateDir = '';
  let remove = false;
  let preferNode = false;
  let portText = process.env.CONDUIT_HOST_PORT?.trim() || '9119';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--profile') profile = argv[++i] ?? '';
    else if (arg === '--home') home = argv[++i] ?? '';
    else if (arg === '--state') stateDir = argv[++i] ?? '';
    else if (arg === '--port') portText = argv[++i] ?? '';
    else if (arg === '--node-hook') preferNode = true;
    else if (arg === '--remove') remove = true;
    else {
      process.stderr.write(usage());
      return 2;
    }
  }
  home = path.resolve(home);
  stateDir = path.resolve(stateDir || process.env.CONDUIT_STATE_DIR?.trim() || path.join(home, 'conduit-host'));
  if (profile && profile !== 'default' && !isProfileName(profile)) {
    process.stderr.write(`Invalid profile name: ${profile}\n`);
    return 2;
  }
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`Invalid port: ${portText}\n`);
    return 2;
  }
  const profileHome = !profile || profile === 'default' ? home : path.join(home, 'profiles', profile);
  if (!existsSync(profileHome)) {
    process.stderr.write(`No Hermes profile home at ${profileHome}\n`);
    return 1;
  }
  const { runner, curl } = chooseHookRunner({ pathList: process.env.PATH, nodePath: process.execPath, preferNode });
  const { configFile, changed } = await setupHermes({
    profileHome,
    stateDir,
    runner,
    // --remove needs no token: it must not create one just to take the entry out.
    mcp: { url: mcpUrl(port, profile), token: remove ? '' : await readOrCreateMcpToken(stateDir) },
    remove,
    now: new Date(),
  });
  const what = remove ? 'Removed the Conduit hooks and MCP entry from' : 'Wrote the Conduit hooks and MCP entry into';
  process.stdout.write(`${changed ? what : 'Already up to date:'} ${configFile}\n`);
  if (!remove) {
    process.stdout.write(
      runner.kind === 'sh'
        ? `Hook bridge: sh + curl (${curl ?? 'curl'}).\n`
        : curl
          ? 'Hook bridge: Node (--node-hook).\n'
          : 'Hook bridge: Node (no curl on PATH; with curl, hooks start several times faster).\n',
    );
    process.stdout.write(
      `\`hermes conduit-push …\` runs \`conduit push …\` for this profile (${cliShimDir(profileHome)}).\n`,
    );
    process.stdout.write('Restart the Hermes gateway so it loads the hooks and the MCP server.\n');
  }
  return 0;
}
