import { postPresentExchange, presentExchangeRequest } from '@conduit/contracts/dashboard/present';
import { bindRoute } from '@conduit/contracts/server';
import { LockTimeoutError } from '../../credentials/file-lock.js';
import { answerWithDetail, DetailError, readJsonBody } from '../../kernel/detail-errors.js';
import type { HostFeature } from '../../kernel/feature.js';
import { profileForRoute } from '../../kernel/profile-files.js';
import { limiterKey, perMinute } from '../../kernel/rate-window.js';
import { CorruptStateError } from '../../state/json-state-file.js';
import { relayPresentNudge, type PresentNudge } from './present-nudge.js';
import { exchangePrompts } from './present-prompts.js';
import { presentTool } from './present-tool.js';

export {
  presentEvent,
  presentEventId,
  relayPresentNudge,
  type PresentNudge,
  type PresentNudgeOutcome,
} from './present-nudge.js';
export {
  announceChange,
  createPrompt,
  exchangePrompts,
  lastExchangeAdvertises,
  readPrompt,
  type CreatedPrompt,
} from './present-prompts.js';
export { presentWaiters, waitForAnswer, type WaitOptions } from './present-signals.js';
export { PRESENT_FILE, PRESENT_STORE_LIMITS, type PromptInput, type StoredPrompt } from './present-store.js';
export { PRESENT_TOOL, PRESENT_TOOL_DESCRIPTION, promptForModel } from './present-tool.js';

/** The bounds of the exchange route. */
const BOUNDS = {
  /** The seed: 60 exchanges a minute per profile (a phone exchanges on wake, on push and after answers). */
  exchangesPerMinute: 60,
  /** 50 results with 2,000-character edits fit in about 110 KB; 128 KiB leaves room for the JSON around them. */
  bodyLimitBytes: 128 * 1024,
} as const;

const NO_STORE = { 'Cache-Control': 'no-store' };

export interface PresentFeatureDeps {
  /**
   * How a new prompt wakes the phone; by default relayPresentNudge over the app's relay gateway
   * (FeatureKernel.relayGateway).
   */
  nudge?: PresentNudge;
}

/**
 * Confirm prompts (`present`): conduit_present keeps a prompt in the profile's conduit-present.json and
 * nudges the phone with a phone.changes event; Conduit answers and fetches waiting prompts with POST
 * /present/exchange (the seed, conduit_present).
 */
export function presentFeature(deps: PresentFeatureDeps = {}): HostFeature {
  return {
    name: 'present',
    capabilities: [{ name: 'present', method: 'POST', path: postPresentExchange.path }],
    tools: [
      presentTool(
        (kernel) =>
          deps.nudge ??
          relayPresentNudge({ gateway: kernel.relayGateway, clock: kernel.clock, pluginVersion: kernel.loadedVersion }),
      ),
    ],
    register(scope, kernel) {
      const exchanges = perMinute(BOUNDS.exchangesPerMinute, kernel.clock);
      answerWithDetail(scope, {
        bodyLimitBytes: BOUNDS.bodyLimitBytes,
        known(error) {
          if (error instanceof CorruptStateError) return new DetailError(503, error.message);
          if (error instanceof LockTimeoutError)
            return new DetailError(503, 'Confirm prompts are busy; try again shortly');
          return undefined;
        },
        failure: (_request, type) => `Present exchange failed on the host (${type})`,
      });

      bindRoute(scope, postPresentExchange, async ({ query, body: raw }) => {
        const profile = profileForRoute(kernel.hermesHome, query.profile);
        // Validated before the limit is taken, so a malformed retry loop does not lock the phone out.
        const parsed = presentExchangeRequest.safeParse(readJsonBody(raw));
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw new DetailError(
            400,
            `Invalid exchange: ${issue?.path.join('.') || 'body'} ${issue?.message ?? ''}`.trim(),
          );
        }
        if (!exchanges.tryTake(limiterKey(query.profile))) {
          throw new DetailError(
            429,
            `Too many present exchanges for this profile (at most ${BOUNDS.exchangesPerMinute} a minute); try again shortly`,
          );
        }
        const { prompts, settled } = await exchangePrompts(profile.home, parsed.data, kernel.clock.now() / 1000);
        kernel.log.info('present exchange', {
          profile: profile.name,
          answered: settled.length,
          ignored: parsed.data.results.length - settled.length,
          waiting: prompts.length,
        });
        return { status: 200, body: { ok: true as const, prompts }, headers: NO_STORE };
      });
    },
  };
}
