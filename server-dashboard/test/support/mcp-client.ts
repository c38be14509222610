import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MCP_PATH } from '../../src/mcp/mcp-endpoint.js';

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
