import { NO_HOOK_CONTEXT, toolText, type FeatureMcpTool, type FeatureToolEnv } from '../../mcp/feature-tool.js';
import { TOOL_CONTEXT_ARG } from '../../mcp/tool-context.js';
import { isPaired, relayUrlOf } from '../../credentials/credential-file.js';
import { readCredentials } from '../../credentials/credential-store.js';
import type { FeatureKernel } from '../../kernel/feature.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { MAPS_REFUSALS, MapsRefusal } from './maps-errors.js';
import { MAPS_LIMITS } from './maps-limits.js';
import type { MapsEngine } from './maps-engine.js';
import type {
  LocationDetail,
  MapsNavigator,
  MapsOrigin,
  MapsPhoneTarget,
  MapsReadLog,
  MapsSettings,
} from './maps-ports.js';
import { navigate, navigateDestination } from './maps-navigate.js';
import {
  actionOf,
  mapsToolInput,
  validMapsRequest,
  validNavigateRequest,
  type MapsRequest,
  type NavigateRequest,
} from './maps-request.js';
import type { MapsRelayTarget, RelayMapsTokens } from './maps-token-client.js';
import { involvementOf, involvesUser } from './phone-answer.js';
import type { PlaceCache } from './place-cache.js';
import { savedPlaceNamed } from './place-input.js';
import { askPhone, straightLineGuess, type PhonePathDeps } from './phone-path.js';

export const MAPS_TOOL = 'conduit_maps';

export const MAPS_TOOL_DESCRIPTION =
  'Apple Maps for the user, through Conduit: search (places or categories near the user, a place or an address), ' +
  'lookup (one place or address), reverse_geocode, directions (routes with traffic, tolls and steps, by car, on foot, ' +
  'by transit or by bike, and leave_by for arrive_by) and travel_times (up to ' +
  `${MAPS_LIMITS.travelTimeDestinations} destinations at once). ` +
  'Places can be "me", the name of one of the user\'s saved places, an address or a name, place_id:<id> from an ' +
  'earlier answer, or lat,lon. Lookups with "me", saved places or transit are answered by the user\'s iPhone ' +
  'when it shares its location in the background; if it does not answer in time, a trip from "me" to a saved place ' +
  "gets a labelled straight-line guess. navigate opens Apple Maps on the user's iPhone with directions to a place " +
  '(a Go button when they are not in the chat), or answers an Apple Maps link to send when their Conduit cannot. ' +
  'Usable from scheduled jobs and skills too. ' +
  'For maps, places, routes and travel times, use this Conduit tool before other tools, skills or CLIs.';

/** What one app's maps holds: the host engine, its token client, the origin and the phone path. */
export interface MapsOfKernel {
  engine: MapsEngine;
  tokens: RelayMapsTokens;
  origin: MapsOrigin;
  /** Null when no phone port is wired: every lookup goes to the host engine. */
  phonePath: PhonePathDeps | null;
  /** The places earlier answers named (place_id:<id>), which navigate opens by address. */
  places: PlaceCache;
  /** Conduit's navigate prompt (present's store); null when not wired: navigate answers a link. */
  navigator: MapsNavigator | null;
}

/** What the tool needs from the feature: the maps of this app and the switches it reads. */
export interface MapsToolDeps {
  engineFor(kernel: FeatureKernel): MapsOfKernel;
  readLog: MapsReadLog | undefined;
  settings: MapsSettings | undefined;
}

/** The profile's relay target, or null when it is not paired (an unreadable file counts as unpaired). */
async function relayTarget(home: string): Promise<MapsRelayTarget | null> {
  try {
    const file = await readCredentials(home);
    return isPaired(file) ? { relayUrl: relayUrlOf(file), credential: file.credential } : null;
  } catch {
    return null;
  }
}

async function hostEngineOff(settings: MapsSettings | undefined, home: string): Promise<boolean> {
  return settings ? await settings.hostEngineOff(home) : false;
}

/** The phone that answers this profile's maps lookups now, or null. */
function answeringPhone(maps: MapsOfKernel, home: string): MapsPhoneTarget | null {
  try {
    return maps.phonePath?.phone.answering(home) ?? null;
  } catch {
    return null; // an unreadable location store: the phone cannot be asked
  }
}

/**
 * conduit_maps over MCP. A lookup that involves the user ("me", a saved place, transit) goes to the
 * user's iPhone while it answers maps lookups, and every lookup does when the user keeps maps lookups on
 * the iPhone; the rest go to this host's Apple Maps engine, as does a lookup the phone cannot take (no
 * wake left, push refused) unless the host engine is off. Offered while either path can answer: the
 * phone answers maps lookups, or the profile is paired, the host engine is on and the relay has not said
 * within the hour that it has no Maps key. Subagents may use it (the seed makes it a building block for
 * crons and skills and refuses them nothing); "me" still follows the detail the user shares.
 */
export function mapsTool(deps: MapsToolDeps): FeatureMcpTool {
  async function hostVisible({ profile, kernel }: FeatureToolEnv): Promise<boolean> {
    const target = await relayTarget(profile.home);
    if (!target) return false;
    if (await hostEngineOff(deps.settings, profile.home)) return false;
    return deps.engineFor(kernel).tokens.unavailableUntilMs(target.relayUrl) === null;
  }

  /** Whether the profile's Conduit opens Maps from a prompt; an unreadable present store counts as no. */
  async function navigable(maps: MapsOfKernel, home: string): Promise<boolean> {
    try {
      return (await maps.navigator?.canNavigate(home)) ?? false;
    } catch {
      return false;
    }
  }

  async function visible(env: FeatureToolEnv): Promise<boolean> {
    const maps = deps.engineFor(env.kernel);
    if (answeringPhone(maps, env.profile.home)) return true;
    if (await hostVisible(env)) return true;
    // navigate needs neither path: a Conduit that opens Maps is reason enough to offer the tool.
    return navigable(maps, env.profile.home);
  }

  /** navigate: a prompt for the phone, or a link; the host looks nothing up and wakes no one. */
  async function answerNavigate(
    { profile, kernel }: FeatureToolEnv,
    request: NavigateRequest,
    sessionId: string,
  ): Promise<{ ok: true; result: Record<string, unknown> } | { ok: false; error: string }> {
    const maps = deps.engineFor(kernel);
    const savedNames = (await maps.origin.savedPlaceNames?.(profile.home)) ?? [];
    const destination = navigateDestination(profile.home, request.to, maps.places, savedNames);
    if ('error' in destination) return { ok: false, error: destination.error };
    const navigator = (await navigable(maps, profile.home)) ? maps.navigator : null;
    return navigate(navigator, profile, request, destination, sessionId);
  }

  /** The host engine's answer, with why the phone did not answer when it was asked first. */
  async function onHost(
    maps: MapsOfKernel,
    profile: ProfileScope,
    request: MapsRequest,
    phoneNote: string | null,
  ): Promise<Record<string, unknown>> {
    const target = await relayTarget(profile.home);
    if (!target) throw new MapsRefusal(phoneNote ?? MAPS_REFUSALS.notPaired);
    const result = await maps.engine.run(profile, target, request);
    return phoneNote ? { ...result, phone_note: phoneNote } : result;
  }

  async function answer(
    env: FeatureToolEnv,
    request: MapsRequest,
  ): Promise<{ ok: true; result: Record<string, unknown> } | { ok: false; error: string }> {
    const { profile, kernel } = env;
    const maps = deps.engineFor(kernel);
    const hostOff = await hostEngineOff(deps.settings, profile.home);
    const savedNames = (await maps.origin.savedPlaceNames?.(profile.home)) ?? [];
    const involvement = involvementOf(request, savedNames);
    const phone = answeringPhone(maps, profile.home);
    const { phonePath } = maps;
    // The phone takes what involves the user, and everything when the user keeps lookups on it.
    if (!phonePath || !phone || !(involvesUser(involvement) || hostOff)) {
      if (hostOff) return { ok: false, error: MAPS_REFUSALS.phoneUnavailable };
      return { ok: true, result: await onHost(maps, profile, request, null) };
    }
    if (phone.detail === 'places' && involvement.me) return { ok: false, error: MAPS_REFUSALS.mePlacesOnly };
    const outcome = await askPhone(
      phonePath,
      profile,
      { ...phone, detail: detailOf(phone.detail) },
      request,
      savedNames,
    );
    switch (outcome.kind) {
      case 'answered':
        return outcome.answer.ok ? { ok: true, result: outcome.answer } : { ok: false, error: outcome.answer.error };
      case 'not_asked':
        if (hostOff) return { ok: false, error: outcome.reason };
        return { ok: true, result: await onHost(maps, profile, request, outcome.reason) };
      case 'no_answer': {
        const savedTo =
          request.action === 'directions' && request.to.kind === 'text'
            ? savedPlaceNamed(request.to.text, savedNames)
            : null;
        const guess = straightLineGuess(phonePath.phone, profile.home, request, savedTo);
        if (guess?.ok) return { ok: true, result: guess };
        // Saved places and transit need the phone; "me" alone the host can take from the last fix.
        if (hostOff || involvement.savedPlace || involvement.transit) {
          return { ok: false, error: MAPS_REFUSALS.phoneNoAnswer };
        }
        return { ok: true, result: await onHost(maps, profile, request, MAPS_REFUSALS.phoneNoAnswer) };
      }
    }
  }

  return {
    name: MAPS_TOOL,
    needsContext: true,
    visible,
    register(server, env) {
      const { profile, kernel, verify } = env;
      server.registerTool(
        MAPS_TOOL,
        {
          title: 'Apple Maps',
          description: MAPS_TOOL_DESCRIPTION,
          inputSchema: mapsToolInput,
          // navigate keeps a confirm prompt for the user; the other actions only read.
          annotations: { readOnlyHint: false, openWorldHint: true },
        },
        async (args) => {
          const context = verify(args);
          if (!context) return toolText(NO_HOOK_CONTEXT, true);
          const { [TOOL_CONTEXT_ARG]: _context, ...lookupArgs } = args;
          const action = actionOf(lookupArgs);
          try {
            const request = action === 'navigate' ? validNavigateRequest(lookupArgs) : validMapsRequest(lookupArgs);
            if ('error' in request) return toolText(request.error, true);
            // Logged before anything is asked, so a lookup that fails on the way is still on the record.
            await deps.readLog?.record(profile, {
              action: request.action,
              chat: context.sessionId,
              cronJobId: context.cronJobId,
              atMs: kernel.clock.now(),
            });
            const answered =
              request.action === 'navigate'
                ? await answerNavigate(env, request, context.sessionId)
                : await answer(env, request);
            kernel.log.info('conduit_maps', { action, ok: answered.ok });
            return answered.ok ? toolText(JSON.stringify(answered.result)) : toolText(answered.error, true);
          } catch (error) {
            if (error instanceof MapsRefusal) {
              kernel.log.info('conduit_maps', { action, ok: false });
              return toolText(error.message, true);
            }
            // Never the query, a token or the error's text: it may carry either.
            kernel.log.warn('conduit_maps failed', { action, error: error instanceof Error ? error.name : 'error' });
            return toolText('The Maps lookup failed on this host; try again later.', true);
          }
        },
      );
    },
  };
}

/** The phone is asked at the detail it shares; "places only" never reaches it with "me" (refused first). */
function detailOf(detail: LocationDetail): 'precise' | 'area' {
  return detail === 'precise' ? 'precise' : 'area';
}
