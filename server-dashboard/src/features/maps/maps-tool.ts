import { NO_HOOK_CONTEXT, toolText, type FeatureMcpTool, type FeatureToolEnv } from '../../mcp/feature-tool.js';
import { TOOL_CONTEXT_ARG } from '../../mcp/tool-context.js';
import { isPaired, relayUrlOf } from '../../credentials/credential-file.js';
import { readCredentials } from '../../credentials/credential-store.js';
import type { FeatureKernel } from '../../kernel/feature.js';
import { MAPS_REFUSALS, MapsRefusal } from './maps-errors.js';
import { MAPS_LIMITS } from './maps-limits.js';
import type { MapsEngine } from './maps-engine.js';
import type { MapsReadLog, MapsSettings } from './maps-ports.js';
import { actionOf, mapsToolInput, validMapsRequest } from './maps-request.js';
import type { MapsRelayTarget, RelayMapsTokens } from './maps-token-client.js';

export const MAPS_TOOL = 'conduit_maps';

export const MAPS_TOOL_DESCRIPTION =
  'Apple Maps for the user, through Conduit: search (places or categories near the user, a place or an address), ' +
  'lookup (one place or address), reverse_geocode, directions (routes with traffic, tolls and steps, by car, on foot or by bike, ' +
  'and leave_by for arrive_by) and travel_times (up to ' +
  `${MAPS_LIMITS.travelTimeDestinations} destinations at once). ` +
  'Places can be "me" (where the user last shared they are), an address or a name, place_id:<id> from an earlier answer, or lat,lon. ' +
  "The user's saved places and transit routes need their iPhone and are refused here. " +
  'Usable from scheduled jobs and skills too. ' +
  'For maps, places, routes and travel times, use this Conduit tool before other tools, skills or CLIs.';

/** What the tool needs from the feature: the engine of this app and the switches it reads. */
export interface MapsToolDeps {
  engineFor(kernel: FeatureKernel): { engine: MapsEngine; tokens: RelayMapsTokens };
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

/**
 * conduit_maps over MCP, answered by this host's Apple Maps engine: offered while the profile is paired
 * with a relay, the user has not kept maps lookups on the iPhone, and the relay has not said within the
 * hour that it has no Maps key. Subagents may use it (the seed makes it a building block for crons and
 * skills and refuses them nothing); "me" still follows the detail the user shares.
 */
export function mapsTool(deps: MapsToolDeps): FeatureMcpTool {
  async function visible({ profile, kernel }: FeatureToolEnv): Promise<boolean> {
    const target = await relayTarget(profile.home);
    if (!target) return false;
    if (await hostEngineOff(deps.settings, profile.home)) return false;
    return deps.engineFor(kernel).tokens.unavailableUntilMs(target.relayUrl) === null;
  }

  return {
    name: MAPS_TOOL,
    needsContext: true,
    visible,
    register(server, { profile, kernel, verify }) {
      server.registerTool(
        MAPS_TOOL,
        {
          title: 'Apple Maps',
          description: MAPS_TOOL_DESCRIPTION,
          inputSchema: mapsToolInput,
          annotations: { readOnlyHint: true, openWorldHint: true },
        },
        async (args) => {
          const context = verify(args);
          if (!context) return toolText(NO_HOOK_CONTEXT, true);
          const { [TOOL_CONTEXT_ARG]: _context, ...lookupArgs } = args;
          const action = actionOf(lookupArgs);
          try {
            const request = validMapsRequest(lookupArgs);
            if ('error' in request) return toolText(request.error, true);
            const target = await relayTarget(profile.home);
            if (!target) return toolText(MAPS_REFUSALS.notPaired, true);
            if (await hostEngineOff(deps.settings, profile.home)) return toolText(MAPS_REFUSALS.hostEngineOff, true);
            // Logged before Apple is asked, so a lookup that fails on the way is still on the record.
            await deps.readLog?.record(profile, {
              action: request.action,
              chat: context.sessionId,
              cronJobId: context.cronJobId,
              atMs: kernel.clock.now(),
            });
            const result = await deps.engineFor(kernel).engine.run(profile, target, request);
            kernel.log.info('conduit_maps', { action, ok: true });
            return toolText(JSON.stringify(result));
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
