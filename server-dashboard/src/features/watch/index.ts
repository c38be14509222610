import { createHash, randomBytes } from 'node:crypto';
import { postWatchToolsGrant, postWatchToolsRevoke } from '@conduit/contracts/dashboard/watch-tools';
import { bindRoute } from '@conduit/contracts/server';
import {
  DEFAULT_RELAY_URL,
  isPaired,
  type CredentialFile,
  type PairedCredentials,
} from '../../credentials/credential-file.js';
import { CorruptCredentialsError, readCredentials } from '../../credentials/credential-store.js';
import { encodeBase64Url } from '../../crypto/base64url.js';
import { answerWithDetail, DetailError, NO_STORE, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { geminiLiveTokensFor } from '../../kernel/gemini-live/index.js';
import { isCredentialSafeRelayUrl } from '../../kernel/loopback.js';
import { lookupsFor } from '../../kernel/lookups/index.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { watchAudioOf, type WatchAudioGrantAnswer } from '../../kernel/watch-audio-port.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { createRelayFetch } from '../../pairing/relay-http.js';
import { readGrantRequest, readRevokeRequest, type GrantRequest } from './grant-request.js';
import { refusal } from './watch-answer.js';
import { isChatTool, WatchChats } from './watch-chats.js';
import { WatchGrantBook, type WatchGrant } from './watch-grants.js';
import { watchJobsFor } from './watch-job-runner.js';
import { isJobTool, type CallJobSettings, type WatchJobs } from './watch-jobs.js';
import { WATCH_LIMITS } from './watch-limits.js';
import { WatchLiveTokens } from './watch-live-token.js';
import { isLookupTool, runLookupTool } from './watch-lookup-tools.js';
import { WatchRelay } from './watch-relay.js';
import { deriveWatchKeys } from './watch-seal.js';

const WITHOUT_WATCH_AUDIO = "This host can't carry Watch audio";

export { WATCH_LIMITS } from './watch-limits.js';
export { NO_WATCH_JOBS, type WatchJobs } from './watch-jobs.js';

export interface WatchToolsDeps {
  /** Where Watch jobs plug in; without it grants carry lookups only (jobs go through the iPhone). */
  jobs?: WatchJobs;
  /** The fetch the relay is asked through; by default the pairing's (TLS checked, no redirects). */
  relayFetch?: typeof fetch;
  /** Random bytes (grant roots, Watch keys, nonces); a test may fix them. */
  random?: (size: number) => Uint8Array;
  userAgent?: string;
}

const GRANT_HEADERS = NO_STORE;

function defaultRandom(size: number): Uint8Array {
  return new Uint8Array(randomBytes(size));
}

/** The profile's pairing, or 409 as ROUTES.md words it. */
async function pairingOf(profile: ProfileScope): Promise<PairedCredentials & { relay_url: string }> {
  let file: CredentialFile | null;
  try {
    file = await readCredentials(profile.home);
  } catch (error) {
    if (!(error instanceof CorruptCredentialsError)) throw error;
    file = null;
  }
  if (!isPaired(file)) throw new DetailError(409, "This Hermes profile isn't paired with Conduit notifications");
  const relayUrl = (file.relay_url ?? DEFAULT_RELAY_URL).trim().replace(/\/+$/, '');
  // HTTPS, or plain HTTP to this machine only (the kernel's one loopback rule): the gateway credential
  // and the Watch's key travel to this relay.
  if (!isCredentialSafeRelayUrl(relayUrl)) throw new DetailError(409, 'The push relay must use HTTPS');
  return { ...file, relay_url: relayUrl };
}

/**
 * Watch tools (`watch-tools`): a Conduit Watch call with the iPhone out of reach asks this profile for a
 * grant; the host opens it on the push relay, long-polls the relay for the Watch's sealed calls, runs
 * them here and seals the answers back (ROUTES.md and CRYPTO.md, Watch tools). The lookups
 * (`web_search`, `recall_memory`) run the Live Voice routes' own code (kernel/lookups), `live_token`
 * the phone's Gemini Live minting (kernel/gemini-live), and `find_chat`/`read_chat` read the profile's
 * Hermes chats (kernel/hermes-chats); jobs plug in through `WatchJobs` (Hermes runs, watch-job-runner.ts).
 */
export function createWatchToolsFeature(deps: WatchToolsDeps = {}): HostFeature {
  const random = deps.random ?? defaultRandom;
  return {
    name: 'watch-tools',
    // live_token, find_chat and read_chat ride the grant (the seed: capabilities watch-live-token, watch-chats).
    capabilities: [
      { name: 'watch-tools', method: 'POST', path: postWatchToolsGrant.path },
      // Jobs and their follow-ups ride the grant; a grant leaves them out where no Hermes API server serves the profile.
      { name: 'watch-jobs', method: 'POST', path: postWatchToolsGrant.path },
      { name: 'watch-job-follow-ups', method: 'POST', path: postWatchToolsGrant.path },
      { name: 'watch-live-token', method: 'POST', path: postWatchToolsGrant.path },
      { name: 'watch-chats', method: 'POST', path: postWatchToolsGrant.path },
    ],
    register(scope, kernel) {
      // Jobs run through the kernel's Hermes API client where one is configured (watch-job-runner.ts).
      const jobs = deps.jobs ?? watchJobsFor(kernel, random);
      const lookups = lookupsFor(kernel);
      const liveTokens = new WatchLiveTokens(geminiLiveTokensFor(kernel));
      const chats = new WatchChats();
      const relay = new WatchRelay({
        fetch: deps.relayFetch ?? createRelayFetch({ timeoutMs: WATCH_LIMITS.pollTimeoutMs }),
        userAgent: deps.userAgent ?? 'Conduit-Host',
      });
      const book = new WatchGrantBook({
        relay,
        clock: kernel.clock,
        timers: kernel.timers,
        log: kernel.log,
        activity: kernel.activity,
        random,
        runTool: (grant, tool, args, delivery) => {
          if (isLookupTool(tool)) return runLookupTool(lookups, grant.profile, grant.limiterKey, tool, args);
          if (isJobTool(tool)) return jobs.run(grant, tool, args, delivery);
          if (tool === 'live_token') return liveTokens.run(grant, delivery);
          if (isChatTool(tool)) return Promise.resolve(chats.run(grant, tool, args));
          return Promise.resolve(refusal(501, `This host can't run ${tool} for the Watch yet`));
        },
        released: (grant) => {
          jobs.released(grant);
          liveTokens.released(grant);
          chats.released(grant);
          void watchAudioOf(kernel)?.close(grant.id);
        },
      });
      const grantsAsked = perMinute(WATCH_LIMITS.grantsPerMinute, kernel.clock);
      // Grants end with the service: the relay is told, so the Watch falls back to the iPhone at once.
      scope.addHook('onClose', async () => {
        await book.closeAll();
        jobs.close?.();
        lookups.close();
      });
      answerWithDetail(scope, {
        bodyLimitBytes: WATCH_LIMITS.bodyLimitBytes,
        failure: (request, type) =>
          `Watch tools ${request.url.includes('/revoke') ? 'revoke' : 'grant'} failed on the host (${type})`,
      });

      bindRoute(scope, postWatchToolsGrant, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const request = readGrantRequest(readJsonBody(raw));
        const key = limiterKey(query.profile);
        if (!grantsAsked.tryTake(key)) throw new DetailError(429, 'Too many Watch tool grants; try again shortly');
        const granted = grantableTools(request, {
          jobs: await jobs.available(profile),
          liveToken: request.tools.includes('live_token') && (await liveTokens.available(profile)),
          chats: request.tools.some(isChatTool) && chats.available(profile),
        });
        // A host without the Watch audio feature says so before any grant is opened on the relay.
        const audio = request.audio ? watchAudioOf(kernel) : null;
        if (request.audio && !audio) throw new DetailError(501, WITHOUT_WATCH_AUDIO);
        const pairing = await pairingOf(profile);
        const previous = request.carryJobsFrom ? book.openOf(profile, request.carryJobsFrom) : undefined;
        const settings = callSettings(request, previous, granted.withJobs);

        const root = random(32);
        const watchKey = encodeBase64Url(random(32));
        const target = { relayUrl: pairing.relay_url, credential: pairing.credential };
        const opened = await relay.openGrant(target, {
          watchKeySha256: createHash('sha256').update(watchKey, 'ascii').digest('hex'),
          maxCalls: granted.withJobs ? WATCH_LIMITS.maxCallsWithJobs : WATCH_LIMITS.maxCallsWithoutJobs,
          audio: request.audio,
        });
        switch (opened.kind) {
          case 'unsupported':
            throw new DetailError(501, "The push relay doesn't support Watch tools yet");
          case 'capacity':
            throw new DetailError(503, 'The push relay is at capacity for Watch tools');
          case 'unreachable':
            throw new DetailError(502, "Couldn't reach the push relay");
          case 'refused':
            kernel.log.warn('watch grant refused by the relay', { profile: profile.name, status: opened.status });
            throw new DetailError(502, 'The push relay refused the Watch tool grant');
          case 'opened':
            break;
        }
        if (request.audio && !opened.audio) {
          // A relay from before Watch audio opened the grant without the bridge: closed again (ROUTES.md).
          await relay.closeGrant(target, opened.grantId);
          throw new DetailError(501, "The push relay doesn't support Watch audio yet");
        }
        const now = kernel.clock.now();
        const grant: WatchGrant = {
          id: opened.grantId,
          profile,
          limiterKey: key,
          target,
          keys: deriveWatchKeys(root),
          tools: new Set(granted.tools),
          openedAtMs: now,
          expiresAtMs: now + WATCH_LIMITS.grantTtlS * 1000,
          settings,
        };
        const carried = previous !== undefined && granted.withJobs && jobs.carry(previous, grant);
        book.add(grant);
        let audioAnswer: WatchAudioGrantAnswer | null = null;
        if (audio) {
          // Watch audio rides on a grant opened with audio: true (features/watch-audio, through the kernel).
          audioAnswer = await audio.open(
            { id: grant.id, root, relayUrl: target.relayUrl, credential: target.credential, profile },
            await audio.offeredEngines(),
          );
          if (!audioAnswer) {
            book.close(grant, 'revoked');
            throw new DetailError(503, "This host couldn't start the Watch call's audio");
          }
        }
        kernel.log.info('watch grant opened', { profile: profile.name, tools: granted.tools.length });
        const body = {
          ok: true as const,
          grant_id: grant.id,
          relay_url: pairing.relay_url,
          key: encodeBase64Url(root),
          watch_key: watchKey,
          expires_at: opened.expiresAt,
          tools: granted.tools,
          max_calls: granted.withJobs ? WATCH_LIMITS.maxCallsWithJobs : WATCH_LIMITS.maxCallsWithoutJobs,
          max_jobs: settings.maxJobs,
          ...(granted.withJobs ? { job_profiles: settings.jobProfiles ?? [] } : {}),
          ...(carried && previous ? { jobs_carried_from: previous.id } : {}),
          ...(audioAnswer ? { audio: audioAnswer } : {}),
        };
        return { status: 200, body, headers: GRANT_HEADERS };
      });

      bindRoute(scope, postWatchToolsRevoke, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        const grantId = readRevokeRequest(readJsonBody(raw));
        // Another profile's grant answers false, as an unknown one does: ids reveal nothing across profiles.
        const grant = book.openOf(profile, grantId);
        if (grant) book.close(grant, 'revoked');
        return { status: 200, body: { ok: true as const, revoked: grant !== undefined }, headers: GRANT_HEADERS };
      });
    },
  };
}

/** What this host can serve a profile's grant beyond the lookups, found before the grant is opened. */
interface ProfileServes {
  /** Hermes' chats served in this process (WatchJobs.available). */
  jobs: boolean;
  /** The profile has a Gemini key. */
  liveToken: boolean;
  /** The profile's Hermes session store can be searched. */
  chats: boolean;
}

/**
 * The tools a grant carries: the lookups as asked; the job tools (with their companions `job_news` and
 * `answer_approval`), `live_token` and the chat tools only where this profile can be served them,
 * otherwise left out so the Watch asks the iPhone for them. When nothing asked for is left: 503 for
 * `live_token` alone without a Gemini key (the seed), else 501.
 */
function grantableTools(request: GrantRequest, serves: ProfileServes): { tools: string[]; withJobs: boolean } {
  const tools: string[] = request.tools.filter(isLookupTool);
  const jobTools = request.tools.filter(isJobTool);
  const chatTools = request.tools.filter(isChatTool);
  const withJobs = serves.jobs && jobTools.length > 0;
  // A call that can start or cancel jobs can also follow one up (interrupt_job, the seed's plugin 0.10).
  const followsUp = jobTools.some((tool) => tool === 'start_job' || tool === 'cancel_job');
  if (withJobs) tools.push(...jobTools, ...(followsUp ? ['interrupt_job'] : []), 'job_news', 'answer_approval');
  if (serves.liveToken) tools.push('live_token');
  if (serves.chats) tools.push(...chatTools);
  if (tools.length > 0) return { tools: [...new Set(tools)], withJobs };
  if (jobTools.length > 0) throw new DetailError(501, "Watch jobs aren't available on this host");
  if (chatTools.length > 0) throw new DetailError(501, "Watch chats aren't available on this host");
  if (request.tools.includes('live_token')) throw new DetailError(503, 'GEMINI_API_KEY is not set on this Hermes host');
  throw new DetailError(501, "This host can't serve the Watch tools asked for yet");
}

/** The call's job settings: what the request says, else (for a renewal) the previous grant's, else the defaults. */
function callSettings(request: GrantRequest, previous: WatchGrant | undefined, withJobs: boolean): CallJobSettings {
  if (!withJobs) return { maxJobs: 0, jobOptions: undefined, jobProfiles: undefined };
  return {
    maxJobs: request.maxJobs ?? previous?.settings.maxJobs ?? WATCH_LIMITS.defaultMaxJobs,
    jobOptions: request.jobOptions ?? previous?.settings.jobOptions,
    jobProfiles: request.jobProfiles ?? previous?.settings.jobProfiles,
  };
}

/** The Watch tools feature with this host's defaults (jobs where a Hermes API server is configured). */
export const watchToolsFeature: HostFeature = createWatchToolsFeature();
