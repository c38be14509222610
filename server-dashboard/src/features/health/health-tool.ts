import { z } from 'zod';
import { HEALTH_READ_MAX_DAYS } from '@conduit/contracts/dashboard/health';
import { NO_HOOK_CONTEXT, toolText, type FeatureMcpTool } from '../../mcp/feature-tool.js';
import { TOOL_CONTEXT_ARG } from '../../mcp/tool-context.js';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import { HEALTH_SHAPE, readHealth } from './health-reads.js';

/** The MCP tool that reads the Health data a phone shared with this profile (the seed, Health). */
export const HEALTH_TOOL = 'conduit_health';

export const HEALTH_TOOL_DESCRIPTION =
  "Read the Apple Health data the user's iPhone (and Apple Watch) shares with this Hermes profile through the Conduit app: " +
  'overview (what is shared and how far back), daily and hourly totals (steps, energy, heart rate…), sleep (nights and stages), ' +
  `workouts and samples (raw readings, where the user shares them), at most ${HEALTH_READ_MAX_DAYS} days per call; days are UTC dates. ` +
  'Read only. Start with overview. ' +
  'For health data, use this Conduit tool before other tools, skills or CLIs.';

/** The tool's arguments (the read handler checks them again): healthReadArgs, described for the model. */
export const healthToolInput = {
  action: z
    .enum(['overview', 'daily', 'hourly', 'sleep', 'workouts', 'samples'])
    .describe('What to read; overview first, to learn which metrics and days exist.'),
  days: z
    .number()
    .int()
    .min(1)
    .max(HEALTH_READ_MAX_DAYS)
    .optional()
    .describe(`How many days up to today (or from start_date), 1–${HEALTH_READ_MAX_DAYS}; default 7.`),
  start_date: z.string().optional().describe('First day, YYYY-MM-DD (UTC).'),
  end_date: z.string().optional().describe('Last day, YYYY-MM-DD (UTC).'),
  metric: z
    .string()
    .optional()
    .describe('One metric from overview (stepCount, heartRate…) for daily, hourly or samples.'),
  device: z.string().optional().describe("One device's data (its id from overview); every device when absent."),
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

/** Whether a phone has synced Health data to this profile: the tool is offered only then. */
export function healthShared(home: string): boolean {
  let store: PhoneDataStore | null = null;
  try {
    store = PhoneDataStore.open(home, HEALTH_SHAPE, false);
    return store !== null && store.devices().some((device) => store?.batchCount(device.device_id) !== 0);
  } catch {
    return false; // an unreadable store: not offered
  } finally {
    store?.close();
  }
}

/** conduit_health over MCP: offered once a phone has synced Health data; subagents cannot read it. */
export const healthTool: FeatureMcpTool = {
  name: HEALTH_TOOL,
  needsContext: true,
  visible: ({ profile }) => healthShared(profile.home),
  register(server, { profile, kernel, verify }) {
    server.registerTool(
      HEALTH_TOOL,
      {
        title: 'Read Apple Health data',
        description: HEALTH_TOOL_DESCRIPTION,
        inputSchema: healthToolInput,
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      (args) => {
        const context = verify(args);
        if (!context) return toolText(NO_HOOK_CONTEXT, true);
        // Subagents cannot read health data; their parent can.
        if (context.isChild)
          return toolText(`${HEALTH_TOOL} is not available to subagents; the main chat can read it.`, true);
        const { [TOOL_CONTEXT_ARG]: _context, ...readArgs } = args;
        try {
          const result = readHealth(profile.home, readArgs, {
            nowS: Math.floor(kernel.clock.now() / 1000),
            via: 'tool',
          });
          kernel.log.info('conduit_health', { action: readArgs.action, ok: result.ok });
          return result.ok ? toolText(JSON.stringify(result)) : toolText(result.error, true);
        } catch (error) {
          kernel.log.warn('conduit_health failed', { error: error instanceof Error ? error.name : 'error' });
          return toolText('The health data of this profile could not be read.', true);
        }
      },
    );
  },
};
