import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { initTRPC, TRPCError } from '@trpc/server';
import { hostControlProcedures as c } from '@conduit/contracts/dashboard/control';
import type { Clock } from '../clock.js';
import { CorruptCredentialsError } from '../credentials/credential-store.js';
import { LockTimeoutError } from '../credentials/file-lock.js';
import type { DeliveryQueue } from '../delivery/delivery-queue.js';
import { resolveProfile } from '../fronting/profiles.js';
import { conduitStatus } from '../mcp/conduit-status.js';
import type { ProfileScope } from '../notifier/notifier.js';
import {
  cleanGatewayName,
  pairAndAnnounce,
  PairingInputError,
  setRedaction,
  unpairProfile,
} from '../pairing/pairing.js';
import type { PluginIdentity } from '../pairing/plugin-hello.js';
import { RelayRejected, RelayUnreachable, type RelayApi } from '../pairing/relay-api.js';
import { RelayUrlError } from '../pairing/relay-url.js';
import { statusLines } from '../pairing/status.js';
import { sendTestPush } from '../pairing/test-push.js';
import type { ProfileSettings } from '../settings/profile-settings.js';

export interface HostControlDeps {
  hermesHome: string;
  stateDir: string;
  version: string;
  startedAtMs: number;
  clock: Clock;
  hostname: () => string;
  randomBytes: (length: number) => Uint8Array;
  settings: ProfileSettings;
  queue: DeliveryQueue;
  relay: RelayApi;
  identity: PluginIdentity;
  /** Each procedure called (its name only): the service's record that the CLI came through here. */
  onCall?: (procedure: string) => void;
}

/** The default profile and every `profiles/<name>` home that resolves. */
async function knownProfiles(hermesHome: string): Promise<ProfileScope[]> {
  const profiles: ProfileScope[] = [{ name: 'default', home: hermesHome }];
  let names: string[] = [];
  try {
    names = (await readdir(path.join(hermesHome, 'profiles'), { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch {
    // no named profiles
  }
  for (const name of names) {
    try {
      profiles.push(resolveProfile(hermesHome, name));
    } catch {
      // not a valid profile name: not one Hermes could have made
    }
  }
  return profiles;
}

async function spoolFiles(stateDir: string): Promise<number> {
  try {
    return (await readdir(path.join(stateDir, 'spool'))).filter((name) => name.endsWith('.json')).length;
  } catch {
    return 0;
  }
}

/**
 * The failures `conduit push` prints as they are (PAIRING.md), answered with their own message and a
 * code that says what kind they are; anything else stays an internal error.
 */
function controlError(error: TRPCError): TRPCError {
  const cause = error.cause;
  const code =
    cause instanceof PairingInputError || cause instanceof RelayUrlError
      ? 'BAD_REQUEST'
      : cause instanceof RelayRejected || cause instanceof RelayUnreachable
        ? 'BAD_GATEWAY'
        : cause instanceof CorruptCredentialsError
          ? 'CONFLICT'
          : cause instanceof LockTimeoutError
            ? 'SERVICE_UNAVAILABLE'
            : null;
  return code && cause ? new TRPCError({ code, message: cause.message, cause }) : error;
}

/**
 * The host control router, built from contracts/src/dashboard/control.ts. It acts on the state this
 * process owns (queue, settings, pairing files through their locks), so CLIs ask it instead of
 * opening the files beside a running service.
 */
export function hostControlRouter(deps: HostControlDeps) {
  const t = initTRPC.create();
  const procedure = t.procedure.use(async ({ path: name, next }) => {
    deps.onCall?.(name);
    const result = await next();
    if (!result.ok) throw controlError(result.error);
    return result;
  });
  const announcing = {
    identity: deps.identity,
    relay: deps.relay,
    clock: () => deps.clock.now(),
    randomBytes: deps.randomBytes,
  };
  const profileOf = (requested: string | undefined) => resolveProfile(deps.hermesHome, requested);
  return t.router({
    status: procedure
      .input(c.status.input)
      .output(c.status.output)
      .query(async () => ({
        version: deps.version,
        pid: process.pid,
        startedAtMs: deps.startedAtMs,
        profiles: (await knownProfiles(deps.hermesHome)).map((p) => p.name),
        queueDepth: deps.queue.size,
      })),
    pairings: procedure
      .input(c.pairings.input)
      .output(c.pairings.output)
      .query(async () => {
        const pairings = [];
        for (const profile of await knownProfiles(deps.hermesHome)) {
          // conduitStatus never reads out the credential or a key; the fields are copied one by one.
          const s = await conduitStatus(profile, deps.settings);
          pairings.push({
            profile: s.profile,
            paired: s.paired,
            ...(s.pairing_error !== undefined ? { error: s.pairing_error } : {}),
            ...(s.gateway_name !== undefined ? { gatewayName: s.gateway_name } : {}),
            ...(s.relay_url !== undefined ? { relayUrl: s.relay_url } : {}),
            ...(s.redact_content !== undefined ? { redactContent: s.redact_content } : {}),
            ...(s.end_to_end_encryption !== undefined ? { endToEndEncryption: s.end_to_end_encryption } : {}),
          });
        }
        return { pairings };
      }),
    pushStatus: procedure
      .input(c.pushStatus.input)
      .output(c.pushStatus.output)
      .query(async ({ input }) => {
        const profile = profileOf(input.profile);
        return { profile: profile.name, lines: await statusLines(profile.home, deps.hostname()) };
      }),
    delivery: procedure
      .input(c.delivery.input)
      .output(c.delivery.output)
      .query(async () => ({ queue: deps.queue.stats(), spool: { files: await spoolFiles(deps.stateDir) } })),
    cronMutes: procedure
      .input(c.cronMutes.input)
      .output(c.cronMutes.output)
      .query(async ({ input }) => {
        const profile = profileOf(input.profile);
        return { profile: profile.name, muted: await deps.settings.cron(profile).muted() };
      }),
    setCronMute: procedure
      .input(c.setCronMute.input)
      .output(c.setCronMute.output)
      .mutation(async ({ input }) => {
        const profile = profileOf(input.profile);
        return { profile: profile.name, muted: await deps.settings.cron(profile).setNotify(input.jobId, !input.muted) };
      }),
    pair: procedure
      .input(c.pair.input)
      .output(c.pair.output)
      .mutation(async ({ input }) => {
        const profile = profileOf(input.profile);
        const { gatewayName, announceError } = await pairAndAnnounce(
          {
            home: profile.home,
            profile: profile.name,
            pairingCode: input.pairingCode,
            ...(input.relayUrl !== undefined ? { relayUrl: input.relayUrl } : {}),
            gatewayName: cleanGatewayName(input.gatewayName ?? '', deps.hostname()),
            relay: deps.relay,
          },
          announcing,
        );
        return { profile: profile.name, gatewayName, ...(announceError !== null ? { announceError } : {}) };
      }),
    unpair: procedure
      .input(c.unpair.input)
      .output(c.unpair.output)
      .mutation(async ({ input }) => {
        const profile = profileOf(input.profile);
        return { profile: profile.name, outcome: await unpairProfile(profile.home, deps.relay) };
      }),
    setRedaction: procedure
      .input(c.setRedaction.input)
      .output(c.setRedaction.output)
      .mutation(async ({ input }) => {
        const profile = profileOf(input.profile);
        const randomHex = () => Buffer.from(deps.randomBytes(32)).toString('hex');
        return { profile: profile.name, paired: await setRedaction(profile.home, input.on, randomHex) };
      }),
    testPush: procedure
      .input(c.testPush.input)
      .output(c.testPush.output)
      .mutation(async ({ input }) => {
        const profile = profileOf(input.profile);
        const outcome = await sendTestPush({
          ...announcing,
          home: profile.home,
          profile: profile.name,
          corrupt: input.corrupt === true,
        });
        return {
          profile: profile.name,
          outcome: outcome.kind,
          ...(outcome.kind === 'failed' ? { message: outcome.message } : {}),
        };
      }),
  });
}

/** The control API's type: what `@trpc/client` in `conduit …` is typed by. */
export type HostControlRouter = ReturnType<typeof hostControlRouter>;
