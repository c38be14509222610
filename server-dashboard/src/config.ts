import type { Clock } from './clock.js';
import type { Limits } from './limits.js';
import type { UpstreamOrigins } from './kernel/feature.js';
import type { Timers } from './kernel/timers.js';
import type { Logger } from './log.js';

/**
 * How callers of our plugin routes are checked:
 * - `dashboard`: the service fronts a Hermes dashboard; a caller is accepted when the dashboard
 *   accepts its own credentials (checked against the dashboard, cached briefly, fail closed), and
 *   every other request is proxied there unchanged;
 * - `standalone`: no dashboard; callers present this service's own bearer token.
 */
export type FrontingMode = { mode: 'dashboard'; dashboardUrl: string } | { mode: 'standalone'; bearerToken: string };

/** The host service's configuration, validated once at boot. */
export interface HostConfig {
  host: string;
  port: number;
  /** Version of the code this process loaded. */
  loadedVersion: string;
  /** Reads the version of the code on disk now (differs from loadedVersion after an update without restart). */
  readDiskVersion: () => string | null;
  /** The Hermes root home (`$HERMES_HOME` or ~/.hermes); profiles live under `profiles/<name>`. */
  hermesHome: string;
  /** This service's own private folder (runtime file for the hook bridge, delivery spool). */
  stateDir: string;
  fronting: FrontingMode;
  /**
   * Names (besides IP literals, localhost and this machine's own name) that browsers may reach this
   * service by: `CONDUIT_HOST_ALLOWED_HOSTS`. Any other `Host` is refused (DNS-rebinding guard).
   */
  allowedHosts?: readonly string[];
  /**
   * `CONDUIT_HOST_ALLOW_OPEN_DASHBOARD=1`: the operator accepts listening on a non-loopback address in
   * front of a Hermes dashboard that has no login of its own (refused otherwise, see exposure.ts).
   */
  allowOpenDashboard?: boolean;
  /** The Hermes API server, for answering approvals of turns Hermes runs there. */
  hermesApi?: { url: string; key: string } | undefined;
  limits: Limits;
  clock: Clock;
  log: Logger;
  /** Replaces the network to the relay (tests and benchmarks pass a fetch bound to a local relay). */
  relayFetch?: typeof fetch;
  /** CONDUIT_METRICS_TOKEN: a bearer for `GET /metrics` alone, for a scraper (README, Metrics). */
  metricsToken?: string;
  /** Timers beside the clock (upstream deadlines); tests fire them by hand. Default: real timers. */
  timers?: Timers;
  /**
   * The service's own environment: the default profile's fallback for provider keys (the features read
   * each profile's `.env` first). Tests leave it empty so the runner's variables never leak in.
   */
  serviceEnv?: Readonly<Record<string, string | undefined>>;
  /** Provider origins pointed at local stand-ins by tests; production never sets them. */
  upstreams?: UpstreamOrigins;
}

export class ConfigError extends Error {}
