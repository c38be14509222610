import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { FeatureKernel } from '../kernel/feature.js';
import type { ProfileScope } from '../notifier/notifier.js';
import type { ToolContext } from './tool-context.js';

/** What a feature's MCP tool gets for one request: the profile it acts on and the shared services. */
export interface FeatureToolEnv {
  profile: ProfileScope;
  kernel: FeatureKernel;
  /**
   * The calling turn, from the argument the pre_tool_call hook signed (`_conduit_context`); null when
   * the call did not come through this profile's hook (then the tool must refuse, not guess a chat).
   */
  verify(args: Record<string, unknown>): ToolContext | null;
}

/**
 * A `conduit_*` tool a feature serves over the host's MCP endpoint. The endpoint builds a fresh server
 * per request, so `visible` is asked each time: a tool that cannot work for this profile now (nothing
 * shared, not paired) is not offered to the model at all.
 */
export interface FeatureMcpTool {
  /** The tool's MCP name, e.g. `conduit_location`. */
  name: string;
  /** Whether the pre_tool_call hook signs the calling turn into its arguments (`_conduit_context`). */
  needsContext: boolean;
  visible(env: FeatureToolEnv): Promise<boolean> | boolean;
  register(server: McpServer, env: FeatureToolEnv): void;
}

/** A tool answer with a text body, marked as an error when it is one. */
export function toolText(text: string, isError = false) {
  return { content: [{ type: 'text' as const, text }], ...(isError ? { isError: true } : {}) };
}

/** The text a tool answers when its call did not come through the profile's Conduit hook. */
export const NO_HOOK_CONTEXT =
  "This call did not come through this profile's Conduit hook, so the chat it belongs to is unknown; run `conduit setup-hermes` and restart Hermes.";
