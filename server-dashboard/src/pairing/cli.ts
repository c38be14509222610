import { randomBytes } from 'node:crypto';
import { hostname as osHostname } from 'node:os';
import { CorruptCredentialsError } from '../credentials/credential-store.js';
import { LockTimeoutError } from '../credentials/file-lock.js';
import { ProfileError, resolveProfileHome } from '../credentials/hermes-home.js';
import { hostControlProcedures as c } from '@conduit/contracts/dashboard/control';
import { PLUGIN_CAPABILITIES } from '../notifier/events.js';
import { ServiceError, throughService } from '../control/control-client.js';
import { readPackageVersion } from '../package-version.js';
import { cleanGatewayName, pairAndAnnounce, PairingInputError, setRedaction, unpairProfile } from './pairing.js';
import type { PluginIdentity } from './plugin-hello.js';
import { createRelayApi, RelayRejected, RelayUnreachable, type RelayApi } from './relay-api.js';
import { RelayUrlError } from './relay-url.js';
import { NOT_PAIRED, statusLines } from './status.js';
import { sendTestPush, type TestPushOutcome } from './test-push.js';

/**
 * `conduit push …`: the reference's `hermes conduit-push` (CLI.md) — same subcommands, messages and exit
 * codes — plus `--home DIR` / `--profile NAME` to pick the Hermes profile this process acts on (by
 * default the one `hermes -p` selected through HERMES_HOME, else the sticky active profile). While the
 * host service runs for that Hermes root, each subcommand asks its control API, so the one process that
 * owns the state files reads and writes them; with none running it works on the files itself.
 */
export const USAGE = 'Usage: conduit push {pair|status|test|redact|unpair} [--profile NAME] [--home DIR]';

export interface PushCliDeps {
  env: NodeJS.ProcessEnv;
  out: (line: string) => void;
  err: (line: string) => void;
  relay: RelayApi;
  hostname: () => string;
  clock: () => number;
  randomBytes: (length: number) => Uint8Array;
  identity: PluginIdentity;
}

export function defaultPushDeps(): PushCliDeps {
  const version = readPackageVersion() ?? '0.0.0';
  return {
    env: process.env,
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    relay: createRelayApi({ userAgent: `Conduit-Host/${version}` }),
    hostname: osHostname,
    clock: Date.now,
    randomBytes: (length) => new Uint8Array(randomBytes(length)),
    // The same identity the delivery pipeline announces on every event.
    identity: { version, capabilities: [...PLUGIN_CAPABILITIES] },
  };
}

/** Entry point used by the `conduit` dispatcher (src/cli/main.ts). */
export function run(argv: string[]): Promise<number> {
  return runPush(argv, defaultPushDeps());
}

interface ParsedArgs {
  positional: string[];
  options: Map<string, string | true>;
}

const VALUE_OPTIONS = new Set(['--home', '--profile', '-p', '--relay-url', '--name']);
const FLAG_OPTIONS = new Set(['--corrupt', '--help', '-h']);

function parseArgs(argv: string[]): ParsedArgs | string {
  const positional: string[] = [];
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (VALUE_OPTIONS.has(name)) {
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined) return `${name} needs a value`;
      options.set(name === '-p' ? '--profile' : name, value);
    } else if (FLAG_OPTIONS.has(arg)) {
      options.set(arg === '-h' ? '--help' : arg, true);
    } else if (arg.startsWith('-') && arg.length > 1) {
      return `unknown option ${arg}`;
    } else {
      positional.push(arg);
    }
  }
  return { positional, options };
}

function option(args: ParsedArgs, name: string): string | undefined {
  const value = args.options.get(name);
  return typeof value === 'string' ? value : undefined;
}

export async function runPush(argv: string[], deps: PushCliDeps): Promise<number> {
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    deps.err(args);
    deps.out(USAGE);
    return 2;
  }
  const [action, ...rest] = args.positional;
  if (!action || args.options.has('--help')) {
    deps.out(USAGE);
    return 2;
  }
  try {
    const root = option(args, '--home');
    const profileName = option(args, '--profile');
    const location = () =>
      resolveProfileHome({
        env: deps.env,
        ...(root ? { root } : {}),
        ...(profileName ? { profile: profileName } : {}),
      });
    switch (action) {
      case 'pair':
        return await pair(rest, args, location(), deps);
      case 'status':
        return await status(location(), deps);
      case 'test':
        return await test(location(), args.options.has('--corrupt'), deps);
      case 'redact':
        return await redact(rest, location(), deps);
      case 'unpair':
        return await unpair(location(), deps);
      default:
        deps.out(USAGE);
        return 2;
    }
  } catch (error) {
    if (
      error instanceof PairingInputError ||
      error instanceof RelayUrlError ||
      error instanceof RelayRejected ||
      error instanceof RelayUnreachable ||
      error instanceof CorruptCredentialsError ||
      error instanceof ProfileError ||
      error instanceof LockTimeoutError ||
      error instanceof ServiceError
    ) {
      deps.err(error.message);
      return 1;
    }
    throw error;
  }
}

type Location = { home: string; profile: string };

async function pair(rest: string[], args: ParsedArgs, location: Location, deps: PushCliDeps): Promise<number> {
  const [code] = rest;
  if (!code || rest.length > 1) {
    deps.out('Usage: conduit push pair CODE [--relay-url URL] [--name NAME]');
    return 2;
  }
  const relayUrl = option(args, '--relay-url');
  const name = cleanGatewayName(option(args, '--name') ?? '', deps.hostname());
  const { gatewayName, announceError } = await throughService(
    location,
    deps.env,
    async (api) => {
      const answer = c.pair.output.parse(
        await api.pair.mutate({
          profile: location.profile,
          pairingCode: code,
          ...(relayUrl !== undefined ? { relayUrl } : {}),
          gatewayName: name,
        }),
      );
      return { gatewayName: answer.gatewayName, announceError: answer.announceError ?? null };
    },
    () =>
      pairAndAnnounce(
        {
          home: location.home,
          profile: location.profile,
          pairingCode: code,
          ...(relayUrl !== undefined ? { relayUrl } : {}),
          gatewayName: name,
          relay: deps.relay,
        },
        deps,
      ),
  );
  deps.out(`Paired ${gatewayName} with Conduit.`);
  if (announceError !== null) deps.out(`Warning: could not announce plugin version: ${announceError}`);
  return 0;
}

async function status(location: Location, deps: PushCliDeps): Promise<number> {
  const lines = await throughService(
    location,
    deps.env,
    async (api) => c.pushStatus.output.parse(await api.pushStatus.query({ profile: location.profile })).lines,
    () => statusLines(location.home, deps.hostname()),
  );
  if (!lines) {
    deps.out(NOT_PAIRED);
    return 1;
  }
  for (const line of lines) deps.out(line);
  return 0;
}

async function test(location: Location, corrupt: boolean, deps: PushCliDeps): Promise<number> {
  const outcome = await throughService(
    location,
    deps.env,
    async (api): Promise<TestPushOutcome> => {
      const answer = c.testPush.output.parse(await api.testPush.mutate({ profile: location.profile, corrupt }));
      return answer.outcome === 'failed' ? { kind: 'failed', message: answer.message ?? '' } : { kind: answer.outcome };
    },
    () => sendTestPush({ ...deps, home: location.home, profile: location.profile, corrupt }),
  );
  switch (outcome.kind) {
    case 'sent':
      deps.out(
        corrupt
          ? 'Broken encrypted test notification accepted by the Conduit relay. The phone should show only generic text.'
          : 'Test notification accepted by the Conduit relay.',
      );
      return 0;
    case 'not-paired':
      deps.out(NOT_PAIRED);
      return 1;
    case 'e2e-off':
      deps.out('End-to-end encryption is off for this profile; nothing to corrupt.');
      return 1;
    case 'failed':
      deps.out(`The Conduit relay did not accept the test notification: ${outcome.message}`);
      return 1;
  }
}

async function redact(rest: string[], location: Location, deps: PushCliDeps): Promise<number> {
  const [mode] = rest;
  if (rest.length !== 1 || (mode !== 'on' && mode !== 'off')) {
    deps.out('Usage: conduit push redact {on|off}');
    return 2;
  }
  const on = mode === 'on';
  const paired = await throughService(
    location,
    deps.env,
    async (api) => c.setRedaction.output.parse(await api.setRedaction.mutate({ profile: location.profile, on })).paired,
    () => setRedaction(location.home, on, () => Buffer.from(deps.randomBytes(32)).toString('hex')),
  );
  if (!paired) {
    deps.out(NOT_PAIRED);
    return 1;
  }
  deps.out(
    on
      ? 'Notification content is redacted; approval and clarify cards use generic text.'
      : 'Notification content is no longer redacted.',
  );
  return 0;
}

async function unpair(location: Location, deps: PushCliDeps): Promise<number> {
  const result = await throughService(
    location,
    deps.env,
    async (api) => c.unpair.output.parse(await api.unpair.mutate({ profile: location.profile })).outcome,
    () => unpairProfile(location.home, deps.relay),
  );
  deps.out(result === 'revoked' ? 'Conduit pairing revoked.' : 'This Hermes profile was not paired.');
  return 0;
}
