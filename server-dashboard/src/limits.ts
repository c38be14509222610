/**
 * Every bound of the host service in one table: its default, the environment variable that changes
 * it, and its range. Boot fails on a bad value with a message naming the variable.
 */
export const LIMITS = {
  queueCapacity: { env: 'CONDUIT_QUEUE_CAPACITY', default: 512, min: 1, max: 100_000 },
  /** 24 h: the relay remembers event ids that long, so a resend within it can never push twice. */
  spoolMaxAgeS: { env: 'CONDUIT_SPOOL_MAX_AGE_S', default: 86_400, min: 60, max: 7 * 86_400 },
  deliveryConcurrency: { env: 'CONDUIT_DELIVERY_CONCURRENCY', default: 4, min: 1, max: 64 },
  retryBaseMs: { env: 'CONDUIT_RETRY_BASE_MS', default: 1_000, min: 1, max: 60_000 },
  retryMaxMs: { env: 'CONDUIT_RETRY_MAX_MS', default: 300_000, min: 1, max: 3_600_000 },
  relayTimeoutMs: { env: 'CONDUIT_RELAY_TIMEOUT_MS', default: 15_000, min: 100, max: 120_000 },
  /** A reply whose turn never reports its end (older Hermes) goes out after this. */
  replyHoldMs: { env: 'CONDUIT_REPLY_HOLD_MS', default: 15_000, min: 0, max: 600_000 },
  /** The first clarify poll; later ones back off 2×, up to 10 s, as the reference does. */
  clarifyPollMs: { env: 'CONDUIT_CLARIFY_POLL_MS', default: 2_000, min: 1, max: 60_000 },
  /**
   * How long a held clarify call waits for the phone before Hermes' native clarify runs. It must stay
   * under the shell hook's timeout (setup-hermes writes 300 s, Hermes' maximum).
   */
  clarifyBudgetS: { env: 'CONDUIT_CLARIFY_BUDGET_S', default: 270, min: 1, max: 290 },
  /** How long a caller verified by the Hermes dashboard stays verified. */
  authCacheMs: { env: 'CONDUIT_AUTH_CACHE_MS', default: 30_000, min: 0, max: 600_000 },
  authTimeoutMs: { env: 'CONDUIT_AUTH_TIMEOUT_MS', default: 5_000, min: 100, max: 60_000 },
  /** Largest hook payload accepted from the bridge (Hermes sends whole conversation histories). */
  hookBodyBytes: { env: 'CONDUIT_HOOK_BODY_BYTES', default: 8 * 1024 * 1024, min: 1024, max: 64 * 1024 * 1024 },
  /**
   * A request whose headers have not all arrived by then is answered 408 and closed: a client that
   * trickles headers would otherwise hold its socket (and its share of the per-IP bound) forever.
   */
  headersTimeoutMs: { env: 'CONDUIT_HEADERS_TIMEOUT_MS', default: 30_000, min: 100, max: 600_000 },
  /**
   * The same for the whole request, body included. Longer than the headers' bound because uploads to
   * the Hermes dashboard pass through the proxy; answers (held clarify calls) and upgraded sockets are
   * not bounded by it. Must be at least the headers' bound.
   */
  requestTimeoutMs: { env: 'CONDUIT_REQUEST_TIMEOUT_MS', default: 60_000, min: 100, max: 3_600_000 },
  /**
   * Open connections one address may hold. Loopback callers share one address (browser tabs of the
   * dashboard, held hook calls, Hermes' MCP client), so the default leaves them ample room.
   */
  connectionsPerIp: { env: 'CONDUIT_CONNECTIONS_PER_IP', default: 256, min: 1, max: 100_000 },
} as const;

export type LimitName = keyof typeof LIMITS;
export type Limits = Record<LimitName, number>;

export class LimitError extends Error {}

export function readLimits(env: NodeJS.ProcessEnv): Limits {
  const out = {} as Limits;
  for (const [name, spec] of Object.entries(LIMITS) as [LimitName, (typeof LIMITS)[LimitName]][]) {
    const raw = env[spec.env]?.trim();
    if (!raw) {
      out[name] = spec.default;
      continue;
    }
    const value = Number(raw);
    if (!Number.isInteger(value) || value < spec.min || value > spec.max) {
      throw new LimitError(`${spec.env} must be an integer from ${spec.min} to ${spec.max}`);
    }
    out[name] = value;
  }
  if (out.requestTimeoutMs < out.headersTimeoutMs) {
    throw new LimitError(`${LIMITS.requestTimeoutMs.env} must not be less than ${LIMITS.headersTimeoutMs.env}`);
  }
  return out;
}

export function defaultLimits(): Limits {
  return readLimits({});
}
