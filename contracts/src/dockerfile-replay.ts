/**
 * No Docker engine runs on this project's machines or in its CI, so the servers' images are checked by
 * replaying their Dockerfiles in folders, stage by stage: each stage is a folder standing for its `/`.
 *
 * - `COPY` from the build context copies the files (honouring .dockerignore; a source that is missing
 *   or ignored fails, as `docker build` would); `COPY --from=<stage>` takes them from that stage's
 *   folder; `FROM <earlier stage>` starts from a copy of it.
 * - `RUN npm ci …` is run as `npm ci … --dry-run --offline` (the lockfile resolves for exactly those
 *   workspaces, with no network), and the packages npm lists are compared with the ones this module
 *   derives from the lockfile for the same flags (`-w`, `--include-workspace-root`, `--omit=dev`);
 *   those are then laid out as npm lays them out, hard-linked from the checkout's own node_modules
 *   (which `npm ci` installed from the same lockfile), with the `.bin` links and the workspace links.
 *   Nothing else of the checkout is reachable from the folder: a dependency the flags leave out is
 *   missing there, as it would be in the image.
 * - `RUN npm run build …` runs in the stage's folder with the stage's environment.
 * - Any other `RUN` (the toolchain's apt-get, a chmod) is not replayed; it is reported in
 *   `Stage.skipped`, so each test states which ones it expects.
 * - `ENV`, `WORKDIR`, `USER`, `VOLUME`, `EXPOSE`, `HEALTHCHECK` and `CMD` are recorded.
 * Any other instruction, or a form this module does not follow (a shell-form CMD, a wildcard COPY), fails
 * the replay rather than being skipped.
 *
 * What this does not prove: that the base image pulls, that apt-get and the network install work,
 * that native modules compile in the image (the checkout's own builds stand in for them), file
 * ownership, and anything about the container runtime.
 */
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServerProcess, type ServerProcess } from './testing.js';

/** One instruction of a Dockerfile, continuation lines joined. */
export interface Instruction {
  /** Upper case: `FROM`, `COPY`, … */
  op: string;
  /** Leading `--name=value` flags (`--from`, `--interval`, …). */
  flags: Record<string, string>;
  /** What follows the flags, as written. */
  text: string;
  /** The Dockerfile line it starts on, for messages. */
  line: number;
}

export interface Healthcheck {
  options: Record<string, string>;
  /** The exec-form command (`CMD [...]`). */
  command: string[];
}

/** One stage after its replay. */
export interface Stage {
  name: string | undefined;
  /** The image or earlier stage it starts from. */
  from: string;
  /** The folder standing for the stage's `/`. */
  root: string;
  /** The working directory, as a path in the image. */
  workdir: string;
  env: Record<string, string>;
  /** `undefined` while no USER was given: the image's default, root. */
  user: string | undefined;
  cmd: string[] | undefined;
  healthcheck: Healthcheck | undefined;
  volumes: string[];
  exposed: string[];
  /** The `RUN` commands not replayed, as written. */
  skipped: string[];
  /** What each `RUN npm ci` installed: `name version`, sorted, as npm's dry run lists it. */
  installs: { command: string; packages: string[] }[];
}

export interface ReplayOptions {
  /** The build context (the repository root). */
  context: string;
  /** The Dockerfile, relative to the context. */
  dockerfile: string;
  /** An empty folder for the stages. */
  scratch: string;
  /**
   * Where the packages come from: a folder whose node_modules `npm ci` installed from the same
   * package-lock.json as the one the image copies (the checkout itself).
   */
  installed: string;
}

export interface Replay {
  /** The build context it was replayed from. */
  context: string;
  stages: Stage[];
  /** The last stage: the image. */
  image: Stage;
}

/** The file or folder standing for `containerPath` in a replayed stage. */
export function hostPath(stage: Stage, containerPath: string): string {
  return path.join(stage.root, path.posix.resolve(stage.workdir, containerPath));
}

/** Splits a Dockerfile into instructions: comments and blank lines dropped, `\` continuations joined. */
export function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = '';
  let start = 0;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && pending === '')) return;
    if (pending === '') start = index + 1;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      return;
    }
    const whole = (pending + line).trim();
    pending = '';
    const [op = '', ...rest] = whole.split(/\s+/);
    const flags: Record<string, string> = {};
    let body = whole.slice(op.length).trim();
    for (let flag = /^--([a-z-]+)=(\S+)\s*/.exec(body); flag; flag = /^--([a-z-]+)=(\S+)\s*/.exec(body)) {
      flags[flag[1] ?? ''] = flag[2] ?? '';
      body = body.slice(flag[0].length);
    }
    if (rest.length === 0) throw new Error(`Dockerfile line ${start}: ${op} without arguments`);
    instructions.push({ op: op.toUpperCase(), flags, text: body, line: start });
  });
  return instructions;
}

function execForm(instruction: Instruction, text = instruction.text): string[] {
  const parsed: unknown = text.startsWith('[') ? JSON.parse(text) : undefined;
  if (!Array.isArray(parsed) || !parsed.every((part): part is string => typeof part === 'string')) {
    throw new Error(`Dockerfile line ${instruction.line}: ${instruction.op} must use the exec form ["…"]`);
  }
  return parsed;
}

/** The paths .dockerignore leaves out of the build context, as a test on a context-relative path. */
function dockerignore(context: string): (relative: string) => boolean {
  const file = path.join(context, '.dockerignore');
  const patterns = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '' && !line.startsWith('#'))
    : [];
  const expressions = patterns.map((pattern) => {
    if (pattern.startsWith('!')) throw new Error(`.dockerignore: exceptions (${pattern}) are not replayed`);
    const source = pattern
      .replace(/^\/+/, '')
      .split('/')
      .map((part) =>
        part === '**'
          ? '(?:.*/)?'
          : `${part
              .replace(/[.+^${}()|[\]\\]/g, '\\$&')
              .replace(/\*/g, '[^/]*')
              .replace(/\?/g, '[^/]')}/`,
      )
      .join('')
      .replace(/\/$/, '');
    return new RegExp(`^${source}$`);
  });
  // A pattern that matches a folder leaves out everything in it.
  return (relative) => {
    const parts = relative.split(path.sep);
    return parts.some((_, index) => {
      const prefix = parts.slice(0, index + 1).join('/');
      return expressions.some((expression) => expression.test(prefix));
    });
  };
}

/**
 * Copies a file or a folder's contents with hard links (a copy where the file system refuses one),
 * symbolic links as they are. The stages share the checkout's large package files this way; a
 * build step replaces its outputs rather than writing into linked files.
 */
function linkTree(from: string, to: string, skip: (name: string) => boolean = () => false): void {
  const stat = lstatSync(from);
  if (stat.isSymbolicLink()) {
    rmSync(to, { force: true, recursive: true });
    symlinkSync(readlinkSync(from), to);
  } else if (stat.isDirectory()) {
    mkdirSync(to, { recursive: true });
    for (const name of readdirSync(from)) {
      if (!skip(name)) linkTree(path.join(from, name), path.join(to, name));
    }
  } else {
    rmSync(to, { force: true });
    try {
      linkSync(from, to);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      copyFileSync(from, to);
    }
  }
}

/**
 * PATH without the checkout's node_modules/.bin folders (npm and npx put them there for the test
 * runner), so a step finds only the commands its own stage installed and the system's npm — and,
 * first, the folder of the node running this replay: the image's node is the one the native modules
 * were built for. (CI's Node 24 pass runs a node from an npm package, whose folder is itself inside
 * a node_modules; dropping it left `node` to the machine's Node 20 and better-sqlite3 would not load.)
 */
export function toolPath(execPath = process.execPath, searchPath = process.env.PATH ?? ''): string {
  const own = path.dirname(execPath);
  const rest = searchPath
    .split(path.delimiter)
    .filter((entry) => entry !== own && !entry.split(path.sep).includes('node_modules'));
  return [own, ...rest].join(path.delimiter);
}

// ---- npm ci, from the lockfile ----

interface LockEntry {
  name?: string;
  version?: string;
  link?: boolean;
  resolved?: string;
  dev?: boolean;
  optional?: boolean;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  bin?: Record<string, string>;
}

interface Lockfile {
  packages: Record<string, LockEntry>;
}

/** What `npm ci` installs with these flags. */
interface InstallRequest {
  workspaces: string[];
  includeRoot: boolean;
  omitDev: boolean;
}

function parseNpmCi(command: string, env: Record<string, string>): InstallRequest {
  const words = command.split(/\s+/).slice(2);
  const request: InstallRequest = { workspaces: [], includeRoot: false, omitDev: env.NODE_ENV === 'production' };
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index] ?? '';
    if (word === '-w' || word === '--workspace') request.workspaces.push(words[(index += 1)] ?? '');
    else if (word.startsWith('--workspace=')) request.workspaces.push(word.slice('--workspace='.length));
    else if (word === '--include-workspace-root') request.includeRoot = true;
    else if (word === '--omit=dev') request.omitDev = true;
    else if (!['--no-audit', '--no-fund'].includes(word)) throw new Error(`npm ci flag not replayed: ${word}`);
  }
  if (request.workspaces.length === 0) request.includeRoot = true;
  return request;
}

/** Where node (and npm) find `name` from the package at lockfile path `from`. */
function resolveInLockfile(lock: Lockfile, from: string, name: string): string | undefined {
  for (let base = from; ;) {
    const candidate = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (base === '') return undefined;
    const parent = base.lastIndexOf('/node_modules/');
    base = parent >= 0 ? base.slice(0, parent) : '';
  }
}

/** The lockfile paths `npm ci` reifies for a request: packages under node_modules and workspace links. */
function installedPaths(lock: Lockfile, request: InstallRequest, installed: string): string[] {
  const workspaceOf = new Map(
    Object.entries(lock.packages)
      .filter(([key, entry]) => key !== '' && !key.includes('node_modules/') && entry.name)
      .map(([key, entry]) => [entry.name ?? '', key]),
  );
  for (const name of request.workspaces) {
    if (!workspaceOf.has(name)) throw new Error(`npm ci -w ${name}: no such workspace in package-lock.json`);
  }
  const found = new Set<string>();
  const visited = new Set<string>();
  // npm takes what the workspaces asked for reach through every edge but optional peers — their dev
  // dependencies too, and those of the workspaces they depend on — and with dev dependencies omitted
  // it stops at every package the lockfile marks as dev-only (devOptional ones stay).
  const visit = (key: string): void => {
    if (visited.has(key)) return;
    visited.add(key);
    const entry = lock.packages[key];
    if (!entry) throw new Error(`package-lock.json has no entry ${key}`);
    if (request.omitDev && entry.dev) return;
    if (entry.link) {
      found.add(key);
      visit(entry.resolved ?? '');
      return;
    }
    if (key.includes('node_modules/')) found.add(key);
    const edges: [string, boolean][] = [
      ...Object.keys(entry.dependencies ?? {}).map((name): [string, boolean] => [name, false]),
      ...Object.keys(entry.optionalDependencies ?? {}).map((name): [string, boolean] => [name, true]),
      ...Object.keys(entry.peerDependencies ?? {})
        .filter((name) => !entry.peerDependenciesMeta?.[name]?.optional)
        .map((name): [string, boolean] => [name, false]),
      ...(key.includes('node_modules/')
        ? []
        : Object.keys(entry.devDependencies ?? {}).map((name): [string, boolean] => [name, false])),
    ];
    for (const [name, optional] of edges) {
      const target = resolveInLockfile(lock, key, name);
      if (target === undefined) {
        if (optional) continue;
        throw new Error(`package-lock.json: ${key || 'the root'} needs ${name}, which it does not hold`);
      }
      // npm skips an optional package whose platform or engines do not fit; the checkout's own
      // install, by the same npm and Node on this machine, shows which.
      if ((optional || lock.packages[target]?.optional) && !existsSync(path.join(installed, target))) continue;
      visit(target);
    }
  };
  // A workspace asked for is installed as its link in node_modules, like one depended on.
  for (const name of request.workspaces) visit(`node_modules/${name}`);
  if (request.includeRoot) visit('');
  return [...found].sort();
}

/** `name version` as npm's dry run lists a lockfile path. */
function listed(lock: Lockfile, key: string): string {
  const entry = lock.packages[key];
  const target = entry?.link ? lock.packages[entry.resolved ?? ''] : entry;
  return `${key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length)} ${target?.version ?? '?'}`;
}

function replayNpmCi(stage: Stage, command: string, installed: string): void {
  const cwd = hostPath(stage, '.');
  const lockText = readFileSync(path.join(cwd, 'package-lock.json'), 'utf8');
  if (lockText !== readFileSync(path.join(installed, 'package-lock.json'), 'utf8')) {
    throw new Error(`${command}: the image's package-lock.json is not the one ${installed} was installed from`);
  }
  const lock = JSON.parse(lockText) as Lockfile;
  const request = parseNpmCi(command, stage.env);
  const dryRun = spawnSync('npm', [...command.split(/\s+/).slice(1), '--dry-run', '--offline'], {
    cwd,
    env: { PATH: toolPath(), HOME: process.env.HOME ?? '', ...stage.env },
    encoding: 'utf8',
  });
  if (dryRun.status !== 0) throw new Error(`${command} --dry-run --offline failed:\n${dryRun.stderr}`);
  const npmList = dryRun.stdout
    .split('\n')
    .filter((line) => line.startsWith('add '))
    .map((line) => line.slice('add '.length).trim())
    .sort();
  // npm may leave out an optional package the checkout happens to hold (its engines or platform, or how
  // npm's dry run of a subset weighs it): such a package is not part of what the image needs.
  const paths = installedPaths(lock, request, installed).filter(
    (key) => !lock.packages[key]?.optional || npmList.includes(listed(lock, key)),
  );
  const derived = paths.map((key) => listed(lock, key)).sort();
  if (npmList.join('\n') !== derived.join('\n')) {
    const onlyNpm = npmList.filter((item) => !derived.includes(item));
    const onlyDerived = derived.filter((item) => !npmList.includes(item));
    throw new Error(
      `${command}: npm would install ${npmList.length} packages, the lockfile walk found ${derived.length}; ` +
        `only npm: ${onlyNpm.slice(0, 20).join(', ')}; only the walk: ${onlyDerived.slice(0, 20).join(', ')}`,
    );
  }
  for (const key of paths) {
    const entry = lock.packages[key] ?? {};
    const to = path.join(cwd, key);
    mkdirSync(path.dirname(to), { recursive: true });
    if (entry.link) {
      symlinkSync(path.relative(path.dirname(to), path.join(cwd, entry.resolved ?? '')), to);
    } else {
      const from = path.join(installed, key);
      const version = existsSync(path.join(from, 'package.json'))
        ? (JSON.parse(readFileSync(path.join(from, 'package.json'), 'utf8')) as { version?: string }).version
        : undefined;
      if (version !== entry.version) {
        throw new Error(`${from} is ${version ?? 'missing'}, the lockfile says ${entry.version}: run npm ci`);
      }
      // Nested packages are lockfile paths of their own, laid out only when installed.
      linkTree(from, to, (name) => name === 'node_modules');
    }
  }
  for (const key of paths) {
    const entry = lock.packages[key] ?? {};
    const bins = (entry.link ? lock.packages[entry.resolved ?? '']?.bin : entry.bin) ?? {};
    const binDir = path.join(cwd, `${key.slice(0, key.lastIndexOf('node_modules/'))}node_modules`, '.bin');
    for (const [name, file] of Object.entries(bins)) {
      mkdirSync(binDir, { recursive: true });
      const link = path.join(binDir, name);
      if (!existsSync(link)) symlinkSync(path.relative(binDir, path.join(cwd, key, file)), link);
    }
  }
  stage.installs.push({ command, packages: npmList });
}

// ---- the replay ----

function newStage(name: string | undefined, from: string, root: string, base?: Stage): Stage {
  return {
    name,
    from,
    root,
    workdir: base?.workdir ?? '/',
    env: { ...base?.env },
    user: base?.user,
    cmd: base?.cmd,
    healthcheck: base?.healthcheck,
    volumes: [...(base?.volumes ?? [])],
    exposed: [...(base?.exposed ?? [])],
    skipped: [],
    installs: [],
  };
}

function copy(stage: Stage, instruction: Instruction, stages: Stage[], options: ReplayOptions): void {
  const words = instruction.text.split(/\s+/);
  const destination = words.pop() ?? '';
  if (words.length === 0) throw new Error(`Dockerfile line ${instruction.line}: COPY needs a source`);
  if (words.length > 1 && !destination.endsWith('/')) {
    throw new Error(`Dockerfile line ${instruction.line}: several COPY sources need a destination ending in /`);
  }
  const fromStage = instruction.flags.from;
  const source = fromStage === undefined ? undefined : stages.find((earlier) => earlier.name === fromStage);
  if (fromStage !== undefined && !source) {
    throw new Error(`Dockerfile line ${instruction.line}: COPY --from=${fromStage} names no earlier stage`);
  }
  const ignored = dockerignore(options.context);
  for (const word of words) {
    if (/[*?[]/.test(word)) throw new Error(`Dockerfile line ${instruction.line}: wildcards are not replayed`);
    const from = source ? path.join(source.root, path.posix.resolve('/', word)) : path.join(options.context, word);
    if (!existsSync(from)) throw new Error(`Dockerfile line ${instruction.line}: COPY source ${word} does not exist`);
    if (!source && ignored(path.relative(options.context, from))) {
      throw new Error(`Dockerfile line ${instruction.line}: COPY source ${word} is in .dockerignore`);
    }
    const into = hostPath(stage, destination);
    const directory = lstatSync(from).isDirectory();
    const to = directory || !destination.endsWith('/') ? into : path.join(into, path.basename(from));
    mkdirSync(directory ? to : path.dirname(to), { recursive: true });
    if (source) linkTree(from, to);
    else
      cpSync(from, to, {
        recursive: true,
        verbatimSymlinks: true,
        filter: (file) => !ignored(path.relative(options.context, file)),
      });
  }
}

/** Replays every stage of a Dockerfile into `scratch` (see the top of this file). */
export function replayDockerfile(options: ReplayOptions): Replay {
  const stages: Stage[] = [];
  let stage: Stage | undefined;
  for (const instruction of parseDockerfile(readFileSync(path.join(options.context, options.dockerfile), 'utf8'))) {
    if (instruction.op === 'FROM') {
      const [from = '', as, name, extra] = instruction.text.split(/\s+/);
      if ((as !== undefined && as.toUpperCase() !== 'AS') || extra !== undefined) {
        throw new Error(`Dockerfile line ${instruction.line}: FROM <image> [AS <name>] only`);
      }
      const root = path.join(options.scratch, `stage-${stages.length}${name ? `-${name}` : ''}`);
      const base = stages.find((earlier) => earlier.name === from);
      if (base) linkTree(base.root, root);
      // The node images' user and its home; nothing else of the base image is modelled.
      else mkdirSync(path.join(root, 'home/node'), { recursive: true });
      stage = newStage(name, from, root, base);
      stages.push(stage);
      continue;
    }
    if (!stage) throw new Error(`Dockerfile line ${instruction.line}: ${instruction.op} before FROM`);
    switch (instruction.op) {
      case 'WORKDIR':
        stage.workdir = path.posix.resolve(stage.workdir, instruction.text);
        mkdirSync(hostPath(stage, '.'), { recursive: true });
        break;
      case 'ENV':
        for (const pair of instruction.text.split(/\s+/)) {
          const equals = pair.indexOf('=');
          if (equals <= 0) throw new Error(`Dockerfile line ${instruction.line}: ENV NAME=value only`);
          stage.env[pair.slice(0, equals)] = pair.slice(equals + 1);
        }
        break;
      case 'COPY':
        copy(stage, instruction, stages, options);
        break;
      case 'RUN':
        if (/^npm ci(\s|$)/.test(instruction.text)) replayNpmCi(stage, instruction.text, options.installed);
        else if (/^npm run build(\s|$)/.test(instruction.text)) {
          const result = spawnSync('sh', ['-c', instruction.text], {
            cwd: hostPath(stage, '.'),
            env: { PATH: toolPath(), HOME: process.env.HOME ?? '', ...stage.env },
            encoding: 'utf8',
          });
          if (result.status !== 0) {
            throw new Error(
              `Dockerfile line ${instruction.line}: ${instruction.text}\n${result.stdout}${result.stderr}`,
            );
          }
        } else stage.skipped.push(instruction.text);
        break;
      case 'USER':
        stage.user = instruction.text;
        break;
      case 'VOLUME':
        stage.volumes.push(
          ...(instruction.text.startsWith('[') ? execForm(instruction) : instruction.text.split(/\s+/)),
        );
        break;
      case 'EXPOSE':
        stage.exposed.push(...instruction.text.split(/\s+/));
        break;
      case 'CMD':
        stage.cmd = execForm(instruction);
        break;
      case 'HEALTHCHECK': {
        const match = /^CMD\s+(.*)$/.exec(instruction.text);
        if (!match) throw new Error(`Dockerfile line ${instruction.line}: HEALTHCHECK [options] CMD [...] only`);
        stage.healthcheck = { options: instruction.flags, command: execForm(instruction, match[1]) };
        break;
      }
      default:
        throw new Error(`Dockerfile line ${instruction.line}: ${instruction.op} is not replayed`);
    }
  }
  const image = stages.at(-1);
  if (!image) throw new Error(`${options.dockerfile} has no FROM`);
  return { context: options.context, stages, image };
}

// ---- what a server image must be ----

function typeScriptSources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : typeScriptSources(file);
    return /\.[cm]?ts$/.test(entry.name) && !/\.d\.[cm]?ts$/.test(entry.name) ? [file] : [];
  });
}

/** The one base image of this project's server images: Node 24 LTS on Debian 12, slim. */
export const SERVER_BASE_IMAGE = 'node:24-bookworm-slim';

export function imageProblems(replay: Replay): string[] {
  const { stages, image } = replay;
  const { packageManager } = JSON.parse(readFileSync(path.join(replay.context, 'package.json'), 'utf8')) as {
    packageManager?: string;
  };
  const problems: string[] = [];
  for (const stage of stages) {
    if (stage.from !== SERVER_BASE_IMAGE && !stages.some((earlier) => earlier.name === stage.from)) {
      problems.push(`stage ${stage.name ?? '(final)'} starts from ${stage.from}, not ${SERVER_BASE_IMAGE}`);
    }
  }
  if (!stages.some((stage) => stage.installs.some((install) => /\s--omit=dev(\s|$)/.test(install.command)))) {
    problems.push('no stage installs with npm ci --omit=dev');
  }
  const allowed = [
    'apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*',
    `npm install -g ${packageManager ?? '(no packageManager in package.json)'}`,
    ...image.volumes.map((volume) => `mkdir -p ${volume} && chown node:node ${volume} && chmod 0700 ${volume}`),
  ];
  for (const step of stages.flatMap((stage) => stage.skipped)) {
    if (!allowed.includes(step)) problems.push(`RUN not replayed: ${step}`);
  }
  for (const step of allowed.slice(2)) {
    if (!image.skipped.includes(step)) problems.push(`the image never runs: ${step}`);
  }
  if (image.user === undefined || ['root', '0'].includes(image.user.split(':')[0] ?? '')) {
    problems.push(`runs as ${image.user ?? 'root (no USER)'}`);
  }
  if (!image.healthcheck) problems.push('has no HEALTHCHECK');
  if (JSON.stringify(image.cmd) !== JSON.stringify(['node', 'dist/main.js'])) {
    problems.push(`CMD is ${JSON.stringify(image.cmd)}, not ["node","dist/main.js"]`);
  } else if (!existsSync(hostPath(image, 'dist/main.js'))) {
    problems.push(`${path.posix.join(image.workdir, 'dist/main.js')} is not in the image`);
  }
  for (const source of typeScriptSources(image.root)) {
    problems.push(`source file in the image: ${path.relative(image.root, source)}`);
  }
  const app = path.join(image.root, 'app');
  const lock = existsSync(path.join(app, 'package-lock.json'))
    ? (JSON.parse(readFileSync(path.join(app, 'package-lock.json'), 'utf8')) as Lockfile)
    : undefined;
  if (!lock) problems.push('no /app/package-lock.json in the image');
  for (const [key, entry] of Object.entries(lock?.packages ?? {})) {
    if (entry.dev && existsSync(path.join(app, key))) problems.push(`dev dependency in the image: ${key}`);
  }
  return problems;
}

/** A Dockerfile replayed into a temporary folder, which `remove` deletes. */
export interface ReplayedImage extends Replay {
  remove: () => void;
}

/** Replays `dockerfile` (relative to the repository root `context`) with the checkout's packages. */
export function replayImage(context: string, dockerfile: string): ReplayedImage {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'conduit-image-'));
  try {
    const replay = replayDockerfile({ context, dockerfile, scratch, installed: context });
    return { ...replay, remove: () => rmSync(scratch, { recursive: true, force: true }) };
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    throw error;
  }
}

/**
 * The environment a process in the image gets: the image's ENV, then `overrides`; nothing of the test
 * runner's (no NODE_OPTIONS, so plain node runs the compiled files as the image does).
 */
export function imageEnv(image: Stage, overrides: Record<string, string>): Record<string, string> {
  return { PATH: toolPath(), HOME: path.join(image.root, 'home/node'), ...image.env, ...overrides };
}

/** What the image's HEALTHCHECK answered while the server served, and once it had stopped. */
export interface HealthcheckResults {
  serving: number | null;
  stopped: number | null;
}

/**
 * Starts the image's CMD (plain node on its entry) in its working directory with `imageEnv(image, env)`,
 * waits until `ready` says it serves, runs the HEALTHCHECK, hands the server to `use`, stops it with
 * SIGTERM and runs the HEALTHCHECK again.
 */
export async function serveImage(
  image: Stage,
  options: { env: Record<string, string>; port: number; ready: (url: string) => Promise<boolean> },
  use: (server: ServerProcess) => Promise<void>,
): Promise<HealthcheckResults> {
  const [command, ...args] = image.cmd ?? [];
  if (command !== 'node') throw new Error(`the image's CMD does not start node: ${JSON.stringify(image.cmd)}`);
  const server = await startServerProcess({
    name: `${image.workdir} from its image`,
    command: process.execPath,
    args,
    cwd: hostPath(image, '.'),
    env: imageEnv(image, options.env),
    port: options.port,
    ready: options.ready,
    timeoutMs: 60_000,
  });
  let serving: number | null;
  try {
    serving = runHealthcheck(image, options.env);
    await use(server);
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  return { serving, stopped: runHealthcheck(image, options.env) };
}

/** Runs the image's HEALTHCHECK command as Docker would (in the working directory): its exit code. */
export function runHealthcheck(image: Stage, env: Record<string, string>): number | null {
  const [command = '', ...args] = image.healthcheck?.command ?? [];
  const result = spawnSync(command === 'node' ? process.execPath : command, args, {
    cwd: hostPath(image, '.'),
    env: imageEnv(image, env),
    encoding: 'utf8',
    timeout: 30_000,
  });
  return result.status;
}
