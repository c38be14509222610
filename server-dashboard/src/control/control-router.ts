import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { initTRPC } from '@trpc/server';
import { hostControlProcedures as c } from '@conduit/contracts/dashboard/control';
import type { Clock } from '../clock.js';
import type { DeliveryQueue } from '../delivery/delivery-queue.js';
import { resolveProfile } from '../fronting/profiles.js';
import { conduitStatus } from '../mcp/conduit-status.js';
import type { ProfileScope } from '../notifier/notifier.js';
import type { PluginIdentity } from '../pairing/plugin-hello.js';
import type { RelayApi } from '../pairing/relay-api.js';
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
 * The host control router, built from contracts/src/dashboard/control.ts. It acts on the state this
 * process owns (queue, settings, pairing files through their locks), so CLIs ask it instead of
 * opening the files beside a running service.
 */
export function hostControlRouter(deps: HostControlDeps) {
  const t = initTRPC.create();
  const procedure = t.procedure.use(({ path: name, next }) => {
    deps.onCall?.(name);
    return next();
  });
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
    testPush: procedure
      .input(c.testPush.input)
      .output(c.testPush.output)
      .mutation(async ({ input }) => {
        const profile = profileOf(input.profile);
        const outcome = await sendTestPush({
          home: profile.home,
          profile: profile.name,
          identity: deps.identity,
          relay: deps.relay,
          corrupt: input.corrupt === true,
          clock: () => deps.clock.now(),
          randomBytes: deps.randomBytes,
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
