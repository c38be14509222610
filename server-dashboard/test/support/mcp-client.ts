import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MCP_PATH } from '../../src/mcp/mcp-endpoint.js';
import { callHook } from './hook-call.js';

/** The MCP SDK's own client on the host's `/_conduit/mcp`, as Hermes connects (bearer, `?profile=`). */
export async function connectMcp(hostUrl: string, bearer: string | null, profile?: string | null): Promise<Client> {
  const url = new URL(MCP_PATH, hostUrl);
  if (profile) url.searchParams.set('profile', profile);
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: bearer ? { headers: { authorization: `Bearer ${bearer}` } } : {},
  });
  const client = new Client({ name: 'hermes-stand-in', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** The names of the tools the MCP endpoint offers (to `profile` when given), on a client of their own. */
export async function listToolNames(hostUrl: string, bearer: string, profile?: string): Promise<string[]> {
  const client = await connectMcp(hostUrl, bearer, profile);
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

/** The chat turn a tool call comes from, as the hook payload names it. */
export interface HermesTurn {
  /** Named in the hook payload as given, else `default`; the MCP client adds `?profile=` only when given. */
  profile?: string;
  session: string;
  turn: string;
  toolCall: string;
}

/** What the hook answered (its `action`) and what the tool returned (its first text block). */
export interface HermesToolResult {
  hookAction: unknown;
  isError: boolean;
  text: string;
}

/**
 * A Conduit tool called as Hermes calls it: the pre_tool_call hook first (it signs the calling turn into
 * the arguments), then `name` through the MCP SDK's own client with the arguments the hook returned.
 */
export async function callToolAsHermes(
  host: { url: string; hookToken: string },
  mcpToken: string,
  name: string,
  args: Record<string, unknown>,
  from: HermesTurn,
): Promise<HermesToolResult> {
  const hooked = await callHook(host.url, host.hookToken, {
    hook_event_name: 'pre_tool_call',
    profile: from.profile ?? 'default',
    session_id: from.session,
    tool_name: `mcp_conduit_${name}`,
    tool_input: args,
    extra: { turn_id: from.turn, tool_call_id: from.toolCall },
  });
  const answer = hooked.answer as { action: unknown; args: Record<string, unknown> };
  const client = await connectMcp(host.url, mcpToken, from.profile);
  try {
    const result = await client.callTool({ name, arguments: answer.args });
    const text = (result.content as { text: string }[])[0]?.text ?? '';
    return { hookAction: answer.action, isError: result.isError === true, text };
  } finally {
    await client.close();
  }
}
