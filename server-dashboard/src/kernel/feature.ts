import type { FastifyInstance } from 'fastify';
import type { HermesApi } from '@conduit/contracts/hermes/api-client';
import type { Clock } from '../clock.js';
import type { FeatureMcpTool } from '../mcp/feature-tool.js';
import type { RelayGateway } from '../delivery/relay-gateway.js';
import type { Logger } from '../log.js';
import type { HostActivity } from './activity.js';
import type { SharedData } from './phone-data/conduit-first.js';
import type { VoiceToolProvider } from './phone-data/voice-tool-provider.js';
import type { Timers } from './timers.js';

/**
 * A route family a feature serves, named as the Conduit app reads it in `GET /capabilities`, with
 * one path it answers on (a test calls each to prove the family is really served).
 */
export interface FeatureCapability {
  name: string;
  method: 'GET' | 'POST' | 'PUT';
  path: string;
}

/**
 * Provider origins a test points at its local stand-ins. Production never sets them: each feature
 * then talks to the provider's public address.
 */
export interface UpstreamOrigins {
  /** Google's Generative Language API (`https://generativelanguage.googleapis.com`). */
  google?: string;
  /** Tavily's search API (`https://api.tavily.com`). */
  tavily?: string;
  /** Firecrawl's hosted API (`https://api.firecrawl.dev`); FIRECRAWL_API_URL still wins, as in Hermes. */
  firecrawl?: string;
  /** xAI's realtime socket origin (`wss://api.x.ai`); a `ws://` loopback stand-in in tests. */
  xai?: string;
  /** OpenAI's API origin (`https://api.openai.com`), where the API-billed GPT-Live path goes. */
  openai?: string;
  /** ChatGPT's origin (`https://chatgpt.com`), where the subscription GPT-Live path goes. */
  chatgpt?: string;
}

/** What the kernel hands every feature: shared services, never another feature. */
export interface FeatureKernel {
  /** The Hermes root home; profiles live under `profiles/<name>`. */
  hermesHome: string;
  clock: Clock;
  timers: Timers;
  log: Logger;
  /** The service's own environment, the default profile's fallback for keys (kernel/profile-files.ts). */
  serviceEnv: Readonly<Record<string, string | undefined>>;
  upstreams: UpstreamOrigins;
  /**
   * Why routes that take a credential of their own (`registerTokenRoutes`) must not be served here, or
   * null. Set when this host listens beyond loopback in front of a Hermes dashboard the operator let
   * run without a login of its own (CONDUIT_HOST_ALLOW_OPEN_DASHBOARD): there is then no sign-in
   * beside such a credential (the seed, Local Live).
   */
  tokenRoutesRefusal: string | null;
  /** Work a restart would cut off (a relayed call, a streamed reply): begin() it while it runs. */
  activity: HostActivity;
  /**
   * Hermes' scheduled jobs (its API server's `/api/jobs`, the client app.ts builds once) and the profile
   * that API server serves (watch-jobs.ts `apiProfileOf`); absent or null when no API server is
   * configured. Place rules keep their cron jobs through it, as call watches do.
   */
  hermesJobs?: HermesJobsPort | null;
  /**
   * Hermes' runs (its API server's `/v1/runs`, the same client app.ts builds once) and the profile that
   * API server serves; absent or null when no API server is configured. Watch jobs start, follow,
   * steer, stop and answer approvals of their chats through it.
   */
  hermesRuns?: HermesRunsPort | null;
  /** The relay's gateway routes as this service reaches them (events through a profile's pairing). */
  relayGateway: RelayGateway;
  /** The version of the code this process loaded (events name the plugin version). */
  loadedVersion: string;
  /**
   * The voice reads the registered features declare (`HostFeature.voiceTools`), in the order the
   * features are registered: the voice-tools feature serves these.
   */
  voiceTools: readonly VoiceToolProvider[];
}

/** The jobs methods a feature may use, so a test or another Hermes surface can stand in. */
export interface HermesJobsPort {
  api: Pick<HermesApi, 'listJobs' | 'createJob' | 'updateJob' | 'deleteJob' | 'runJob'>;
  apiProfile: string;
}

/** The runs methods a feature may use, and the one profile the API server behind them serves. */
export interface HermesRunsPort {
  api: Pick<HermesApi, 'startRun' | 'runEvents' | 'answerApproval' | 'stopRun' | 'steerRun'>;
  apiProfile: string;
  /**
   * The API server's configured address (never its key), where another profile is reached under
   * `/p/<profile>` with that profile's own key; null when unknown.
   */
  url: string | null;
}

/**
 * A feature of the host service (ARCHITECTURE.md, "The host service grows by features"): a folder
 * `src/features/<name>/` that owns its routes and state, registered by app.ts as an encapsulated
 * Fastify plugin inside the authenticated scope. `GET /capabilities` lists the capabilities of the
 * features that are registered, whether or not a provider is configured: each family's status route
 * says whether it is available.
 */
export interface HostFeature {
  name: string;
  capabilities: readonly FeatureCapability[];
  register(scope: FastifyInstance, kernel: FeatureKernel): Promise<void> | void;
  /**
   * Routes that take a credential of the feature's own instead of the dashboard sign-in (what Hermes'
   * token-route seam gives a plugin). app.ts registers them in an encapsulated scope of their own,
   * outside the authenticated one: the feature's `onRequest` check is the only caller check they run,
   * and that credential is never accepted by any other route.
   */
  registerTokenRoutes?(scope: FastifyInstance, kernel: FeatureKernel): Promise<void> | void;
  /** The `conduit_*` tools this feature serves to Hermes over the host's MCP endpoint. */
  tools?: readonly FeatureMcpTool[];
  /**
   * The phone data this feature reads for Hermes, each with its Conduit tool: the "Conduit first" line
   * (kernel/phone-data/conduit-first.ts) names those a profile's phone shares, in registration order.
   */
  sharedData?: readonly SharedData[];
  /**
   * This feature's tools as voice reads (kernel/phone-data/voice-tool-provider.ts), in the order they
   * are listed; the voice-tools feature serves those of every registered feature.
   */
  voiceTools?: readonly VoiceToolProvider[];
}
