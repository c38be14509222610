import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { profileQuery } from '@conduit/contracts/dashboard/profile';
import { bearerMatches } from '@conduit/contracts/server/secrets';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isLoopbackHost } from '../kernel/loopback.js';
import { resolveProfile } from '../fronting/profiles.js';
import type { Logger } from '../log.js';
import type { ProfileScope } from '../notifier/notifier.js';
import type { ProfileSettings } from '../settings/profile-settings.js';
import { conduitStatus } from './conduit-status.js';
import { TOOL_CONTEXT_ARG, type ToolContextSigner } from './tool-context.js';
import { readCredentials } from '../credentials/credential-store.js';
import { isPaired } from '../credentials/credential-file.js';
import {
  CALL_USER_DESCRIPTION,
  CALL_USER_TOOL,
  callUserInput,
  requestCall,
  type CallUserAnswer,
} from '../features/calls/call-tool.js';
import { settingsOf, type CallsState } from '../features/calls/calls-state.js';
import { CallWatchesState, profileTimeZone, reportWatch, type ReportAnswer } from '../features/calls/call-watches.js';
import {
  CALL_WATCH_DESCRIPTION,
  CALL_WATCH_TOOL,
  WATCH_REPORT_DESCRIPTION,
  WATCH_REPORT_TOOL,
  callWatchInput,
  watchReportInput,
  type CallWatchAnswer,
  type CallWatchJobs,
} from '../features/calls/watch-jobs.js';
import type { Clock } from '../clock.js';
import type { FeatureKernel, HostFeature } from '../kernel/feature.js';
import { NO_HOOK_CONTEXT } from './feature-tool.js';

/** Where Hermes reaches the conduit_* tools; outside /api, so it is never proxied to the dashboard. */
export const MCP_PATH = '/_conduit/mcp';
export const MCP_SERVER_NAME = 'conduit';

/**
 * The endpoint's own tools. Only what this service can really answer: a tool that cannot work must not
 * be offered to the model. conduit_call_user is offered only while the profile is paired and "call when
 * I ask" or "Hermes decides" is on; conduit_call_watch while it is paired on a Hermes whose scheduled
 * jobs this host can write; conduit_watch_report while it is paired (it only works in a call watch's
 * run). Features add theirs (`HostFeature.tools`, each with its own visibility rule).
 */
export const MCP_TOOLS = ['conduit_status', CALL_USER_TOOL, CALL_WATCH_TOOL, WATCH_REPORT_TOOL] as const;

/** The name Hermes gives one of this server's tools (`mcp_<server>_<tool>`), as its hooks see it. */
export function hermesToolName(tool: string): string {
  return `mcp_${MCP_SERVER_NAME}_${tool}`;
}

/** The tools whose calls the pre_tool_call hook signs with the calling turn (tool-context.ts). */
export function toolsNeedingContext(features: readonly HostFeature[]): readonly string[] {
  const featureTools = features.flatMap((feature) => feature.tools ?? []).filter((tool) => tool.needsContext);
  return [CALL_USER_TOOL, WATCH_REPORT_TOOL, ...featureTools.map((tool) => tool.name)].map(hermesToolName);
}

function answered(answer: CallUserAnswer | CallWatchAnswer | ReportAnswer) {
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(answer) }],
    structuredContent: answer as unknown as Record<string, unknown>,
    ...(answer.status === 'refused' || answer.status === 'failed' ? { isError: true } : {}),
  };
}

async function pairedNow(profile: ProfileScope): Promise<boolean> {
  try {
    return isPaired(await readCredentials(profile.home));
  } catch {
    return false; // an unreadable credential: nothing that needs the pairing is offered
  }
}

async function callUserVisible(profile: ProfileScope, options: McpEndpointOptions): Promise<boolean> {
  try {
    const settings = settingsOf(await options.calls.stateOf(profile.home).read(options.clock.now() / 1000));
    return settings.when_asked || settings.decides;
  } catch {
    return false; // an unreadable calls file: not offered
  }
}

async function buildServer(profile: ProfileScope, options: McpEndpointOptions): Promise<McpServer> {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: options.version });
  server.registerTool(
    'conduit_status',
    {
      title: 'Conduit status',
      description:
        "Whether this Hermes profile is paired with the user's Conduit app (iPhone and Apple Watch), through " +
        'which push relay, whether notification content is redacted or end-to-end encrypted, and which ' +
        'notifications the user turned off (muted cron jobs, reply sources). Read only.',
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => {
      try {
        const status = await conduitStatus(profile, options.settings);
        return { content: [{ type: 'text', text: JSON.stringify(status) }], structuredContent: status };
      } catch (error) {
        options.log.warn('conduit_status failed', { error: error instanceof Error ? error.name : 'error' });
        return {
          isError: true,
          content: [{ type: 'text', text: 'The Conduit settings of this profile could not be read.' }],
        };
      }
    },
  );
  const paired = await pairedNow(profile);
  const watchesOf = () => new CallWatchesState(options.calls.stateOf(profile.home));
  if (paired && (await callUserVisible(profile, options))) {
    server.registerTool(
      CALL_USER_TOOL,
      {
        title: 'Call the user',
        description: CALL_USER_DESCRIPTION,
        inputSchema: callUserInput,
        annotations: { readOnlyHint: false, openWorldHint: true },
      },
      async (args) => {
        const context = options.toolContext.verify(args[TOOL_CONTEXT_ARG], profile.home);
        if (!context) return answered({ status: 'refused', message: `${NO_HOOK_CONTEXT} No call was placed.` });
        if (context.isChild) {
          return answered({
            status: 'refused',
            message: "Subagents can't call the user; the agent that started you can. No call was placed.",
          });
        }
        try {
          // A call watch's run reports what it found; the watch decides when to call (once per incident).
          if (context.cronJobId !== undefined && (await watchesOf().isWatchJob(context.cronJobId))) {
            return answered({
              status: 'refused',
              message: `This run belongs to a call watch: report with ${WATCH_REPORT_TOOL}, which calls the user when the watch should. No call was placed.`,
            });
          }
          const answer = await requestCall(
            options.calls.stateOf(profile.home),
            options.clock.now() / 1000,
            context.sessionId,
            args,
          );
          options.log.info('conduit_call_user', { status: answer.status, asked: args.asked_by_user });
          return answered(answer);
        } catch (error) {
          options.log.warn('conduit_call_user failed', { error: error instanceof Error ? error.name : 'error' });
          return answered({
            status: 'refused',
            message: 'The Conduit call settings could not be read. No call was placed.',
          });
        }
      },
    );
  }
  if (paired && options.watchJobs && (await options.watchJobs.available(profile))) {
    const jobs = options.watchJobs;
    server.registerTool(
      CALL_WATCH_TOOL,
      {
        title: 'Set up a call watch',
        description: CALL_WATCH_DESCRIPTION,
        inputSchema: callWatchInput,
        annotations: { readOnlyHint: false, openWorldHint: false },
      },
      async (args) => {
        try {
          const answer = await jobs.handle(watchesOf(), args);
          options.log.info('conduit_call_watch', { status: answer.status, sync: args.sync !== undefined });
          return answered(answer);
        } catch (error) {
          options.log.warn('conduit_call_watch failed', { error: error instanceof Error ? error.name : 'error' });
          return answered({ status: 'failed', message: 'The call watches of this profile could not be read.' });
        }
      },
    );
  }
  if (paired) {
    server.registerTool(
      WATCH_REPORT_TOOL,
      {
        title: 'Report a call watch',
        description: WATCH_REPORT_DESCRIPTION,
        inputSchema: watchReportInput,
        annotations: { readOnlyHint: false, openWorldHint: true },
      },
      async (args) => {
        const context = options.toolContext.verify(args[TOOL_CONTEXT_ARG], profile.home);
        if (!context) return answered({ status: 'refused', message: NO_HOOK_CONTEXT });
        if (context.isChild || context.cronJobId === undefined) {
          return answered({
            status: 'refused',
            message: `${WATCH_REPORT_TOOL} only works in the run of a call watch's cron job. To set up a watch use ${CALL_WATCH_TOOL}.`,
          });
        }
        const sentence = args.sentence.trim();
        if (!sentence) {
          return answered({ status: 'refused', message: 'sentence must say, in words, what the run found.' });
        }
        try {
          const answer = await reportWatch(
            watchesOf(),
            {
              jobId: context.cronJobId,
              sessionId: context.sessionId,
              nowMs: options.clock.now(),
              timeZone: await profileTimeZone(profile),
            },
            { happening: args.happening, sentence },
          );
          options.log.info('conduit_watch_report', {
            status: answer.status,
            calling: answer.status === 'reported' && answer.calling,
          });
          return answered(answer);
        } catch (error) {
          options.log.warn('conduit_watch_report failed', { error: error instanceof Error ? error.name : 'error' });
          return answered({ status: 'refused', message: 'The call watch state could not be read. Reply [SILENT].' });
        }
      },
    );
  }
  const env = {
    profile,
    kernel: options.kernel,
    verify: (args: Record<string, unknown>) => options.toolContext.verify(args[TOOL_CONTEXT_ARG], profile.home),
  };
  for (const feature of options.features) {
    for (const tool of feature.tools ?? []) {
      let visible = false;
      try {
        visible = await tool.visible(env);
      } catch (error) {
        // A tool whose state cannot be read is not offered; the others still are.
        options.log.warn('mcp tool visibility failed', {
          tool: tool.name,
          error: error instanceof Error ? error.name : 'error',
        });
      }
      if (visible) tool.register(server, env);
    }
  }
  return server;
}

export interface McpEndpointOptions {
  hermesHome: string;
  /** The bearer token of `<state dir>/mcp-token`, never logged. */
  token: string;
  settings: ProfileSettings;
  version: string;
  log: Logger;
  clock: Clock;
  /** Signs and checks the calling turn of a tool call (tool-context.ts). */
  toolContext: ToolContextSigner;
  calls: { stateOf(home: string): CallsState };
  /** Call watches' cron jobs through Hermes' API server; null when none is configured. */
  watchJobs: CallWatchJobs | null;
  /** The registered features; each one's `tools` are served beside the endpoint's own. */
  features: readonly HostFeature[];
  kernel: FeatureKernel;
}

function refuse(reply: FastifyReply, status: number, error: string): FastifyReply {
  return reply.status(status).header('cache-control', 'no-store').send({ error });
}

/**
 * The MCP endpoint (streamable HTTP, stateless: each POST carries one JSON-RPC exchange and gets a
 * JSON answer). Only this machine, only with the MCP token. `?profile=NAME` picks the profile the
 * tools act on, resolved as the plugin routes resolve it (503 rather than another profile).
 */
export function mcpRoutes(app: FastifyInstance, options: McpEndpointOptions): void {
  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: MCP_PATH,
    // Decided from the socket and the headers before the body is read or parsed.
    onRequest: async (request: FastifyRequest, reply: FastifyReply) => {
      if (
        !isLoopbackHost(request.socket.remoteAddress ?? '') ||
        !bearerMatches(request.headers.authorization, options.token)
      ) {
        return refuse(reply.header('www-authenticate', 'Bearer').header('connection', 'close'), 401, 'unauthorized');
      }
      return undefined;
    },
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      // Stateless: no session to resume, so no standalone event stream and nothing to delete.
      if (request.method !== 'POST') return refuse(reply.header('allow', 'POST'), 405, 'method_not_allowed');
      const query = profileQuery.safeParse(request.query);
      if (!query.success) return refuse(reply, 400, 'invalid_query');
      const profile = resolveProfile(options.hermesHome, query.data.profile);

      const server = await buildServer(profile, options);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(request.raw, reply.raw, request.body);
      } catch (error) {
        options.log.error('mcp request failed', { error: error instanceof Error ? error.name : 'error' });
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"internal_error"}');
        }
      }
    },
  });
}
