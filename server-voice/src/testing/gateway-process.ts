import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startServerProcess } from '@conduit/contracts/testing';

const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const REPO_ROOT = path.resolve(PACKAGE_ROOT, '..');
const SOURCE_CONDITION = '--conditions=development';
/**
 * The gateway reads the Hermes profile's config.yaml (`~/.hermes` without HERMES_HOME): a test or benchmark
 * gateway gets a profile home with none, so a developer's own Hermes settings never change what it measures.
 * A caller that wants a profile passes its own HERMES_HOME.
 */
const NO_PROFILE_HOME = path.join(os.tmpdir(), 'conduit-voice-no-profile');

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

/** Starts `npm run voice`'s entry point as a real process and waits until discovery answers. */
export async function startGatewayProcess(
  env: Record<string, string>,
  /** A command the gateway runs under, e.g. `['taskset', '-c', '0']` to pin it to one core. */
  wrapper: string[] = [],
  /** Node flags (e.g. `--cpu-prof`); when given the gateway runs as `node FLAGS --import tsx` instead of the tsx binary. */
  nodeFlags: string[] = [],
): Promise<GatewayProcess> {
  const port = await freePort();
  const entry = path.join(PACKAGE_ROOT, 'src/main.ts');
  // The environment below is built from scratch, so the source condition (workspace packages resolve
  // to their TypeScript sources, not dist/) is a flag.
  const command =
    nodeFlags.length > 0
      ? [...wrapper, process.execPath, ...nodeFlags, SOURCE_CONDITION, '--import', 'tsx', entry]
      : [...wrapper, path.join(REPO_ROOT, 'node_modules/.bin/tsx'), SOURCE_CONDITION, entry];
  const server = await startServerProcess({
    name: 'gateway',
    command: command[0] as string,
    args: command.slice(1),
    cwd: PACKAGE_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      HERMES_HOME: NO_PROFILE_HOME,
      HERMES_REALTIME_PORT: String(port),
      ...env,
    },
    port,
    // Discovery answers 401 without the key once the gateway listens.
    ready: async (url) => (await fetch(`${url}/v1/realtime/discovery`)).status === 401,
  });
  return {
    url: server.url,
    child: server.child,
    output: server.output,
    stop: async () => {
      if (server.child.exitCode === null) server.child.kill('SIGTERM');
      await server.exited;
    },
  };
}

/** Runs the entry point expecting it to refuse to start; resolves with its exit code and output. */
export function runGatewayExpectingFailure(
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      path.join(REPO_ROOT, 'node_modules/.bin/tsx'),
      [SOURCE_CONDITION, path.join(PACKAGE_ROOT, 'src/main.ts')],
      {
        cwd: PACKAGE_ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/tmp',
          HERMES_HOME: NO_PROFILE_HOME,
          HERMES_REALTIME_PORT: '0',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** 48 kHz speech stand-in: `seconds` of a voiced-band tone loud enough for the energy gate. */
export function toneSpeech(seconds: number, leadSilenceSeconds = 0.5, tailSilenceSeconds = 0): Int16Array {
  const lead = Math.round(48_000 * leadSilenceSeconds);
  const body = Math.round(48_000 * seconds);
  const pcm = new Int16Array(lead + body + Math.round(48_000 * tailSilenceSeconds));
  for (let i = 0; i < body; i += 1)
    pcm[lead + i] = Math.round(7000 * Math.sin((2 * Math.PI * 300 * i) / 48_000) * (0.6 + 0.4 * Math.sin(i / 2400)));
  return pcm;
}
