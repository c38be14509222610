import { z } from 'zod';
import { LOCATION_HISTORY_MAX_FIXES } from '@conduit/contracts/dashboard/location';
import { NO_HOOK_CONTEXT, toolText, type FeatureMcpTool } from '../../mcp/feature-tool.js';
import { TOOL_CONTEXT_ARG } from '../../mcp/tool-context.js';
import { locate, type FixSignals } from './locate.js';
import { locationShared, readLocation, type LocationReadResult } from './location-reads.js';
import type { FeatureKernel } from '../../kernel/feature.js';
import type { LocationRelay } from './location-relay.js';
import { PLACE_RULE_ACTIONS, placeRuleToolInput, type PlaceRules } from './place-rules.js';

/** The MCP tool that reads where the user is, as their phone shares it (the seed, Location). */
export const LOCATION_TOOL = 'conduit_location';

export const LOCATION_TOOL_DESCRIPTION =
  'Where the user is, as their iPhone shares it with this Hermes profile through the Conduit app, at the detail they chose ' +
  '(a saved place, an area of about 1 km, or precise). now: the latest fix of each phone (place, area, distances to saved ' +
  'places, age). places: the saved places (names and kinds; private ones are only counted). history: fixes and ' +
  'arrivals/departures over the last hours. distance_to: straight-line distance from the latest fix to a saved place ' +
  '(place, by name or id) or to lat,lon. locate: ask the phone for a fresh fix (at most one every 5 minutes, 30 a day; needs ' +
  'background sharing) and wait up to 20 s for it. rules, set_rule, remove_rule: place rules, each a Hermes cron job ' +
  '"Place rule: <what>" that runs its task when the user arrives at or leaves a saved place (or any), on the days and ' +
  'hours set, once a day or every time at least 30 minutes apart (read the skill using-location first). ' +
  'Answers "paused" or "off" when the user paused or turned off sharing; ' +
  "every read is logged for the user. For the user's location, use this Conduit tool before other tools, skills or CLIs.";

/** The tool's arguments (the read handler checks them again), described for the model. */
export const locationToolInput = {
  action: z
    .enum(['now', 'places', 'history', 'distance_to', 'locate', ...PLACE_RULE_ACTIONS])
    .describe('now first; locate only when a fresh position matters and now is too old.'),
  device: z.string().optional().describe("One phone's data (its device_id from now); every phone when absent."),
  hours: z
    .number()
    .int()
    .min(1)
    .max(365 * 24)
    .optional()
    .describe('history: how many hours back; default 24.'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(LOCATION_HISTORY_MAX_FIXES)
    .optional()
    .describe('history: at most this many fixes, newest first; default 100.'),
  place: z
    .string()
    .optional()
    .describe('distance_to: a saved place, by name or id. set_rule: that saved place, or "any" (the default).'),
  lat: z.number().min(-90).max(90).optional().describe('distance_to: latitude of a point, with lon.'),
  lon: z.number().min(-180).max(180).optional().describe('distance_to: longitude of a point, with lat.'),
  ...placeRuleToolInput,
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

const isRuleAction = (action: string): action is (typeof PLACE_RULE_ACTIONS)[number] =>
  (PLACE_RULE_ACTIONS as readonly string[]).includes(action);

const answer = (result: LocationReadResult) =>
  result.ok ? toolText(JSON.stringify(result)) : toolText(result.error, true);

/**
 * conduit_location over MCP: offered once a phone has sent this profile a location batch (so a user
 * who later pauses or turns sharing off gets "paused" or "off", not a missing tool); subagents cannot
 * use it; every call is logged in the profile's read log.
 */
export function locationTool(deps: {
  relayFor: (kernel: FeatureKernel) => LocationRelay;
  signals: FixSignals;
  /** Place rules (rules, set_rule, remove_rule) of the app this MCP request belongs to. */
  rulesFor: (kernel: FeatureKernel) => PlaceRules;
}): FeatureMcpTool {
  return {
    name: LOCATION_TOOL,
    needsContext: true,
    visible: ({ profile }) => locationShared(profile.home),
    register(server, { profile, kernel, verify }) {
      server.registerTool(
        LOCATION_TOOL,
        {
          title: "Read the user's location",
          description: LOCATION_TOOL_DESCRIPTION,
          inputSchema: locationToolInput,
          // set_rule and remove_rule change Hermes' cron jobs.
          annotations: { readOnlyHint: false, openWorldHint: false },
        },
        async (args) => {
          const context = verify(args);
          if (!context) return toolText(NO_HOOK_CONTEXT, true);
          if (context.isChild) {
            return toolText(`${LOCATION_TOOL} is not available to subagents; the main chat can read it.`, true);
          }
          const { [TOOL_CONTEXT_ARG]: _context, ...readArgs } = args;
          try {
            if (isRuleAction(readArgs.action)) {
              const ruled = await deps.rulesFor(kernel).act(profile, readArgs.action, readArgs);
              kernel.log.info(LOCATION_TOOL, { action: readArgs.action, ok: ruled.ok });
              return ruled.ok ? toolText(JSON.stringify(ruled)) : toolText(ruled.error, true);
            }
            const result =
              readArgs.action === 'locate'
                ? await locate(
                    { relay: deps.relayFor(kernel), signals: deps.signals, clock: kernel.clock, timers: kernel.timers },
                    profile,
                    context.sessionId,
                  )
                : readLocation(profile.home, readArgs, {
                    nowS: kernel.clock.now() / 1000,
                    via: 'tool',
                    chat: context.sessionId,
                  });
            kernel.log.info(LOCATION_TOOL, { action: readArgs.action, ok: result.ok });
            return answer(result);
          } catch (error) {
            kernel.log.warn(`${LOCATION_TOOL} failed`, { error: error instanceof Error ? error.name : 'error' });
            return toolText('The location shared with this profile could not be read.', true);
          }
        },
      );
    },
  };
}
