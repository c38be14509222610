/**
 * Every bound of the relay in one table: its default and the environment variable that changes it.
 * Unset or blank keeps the default; anything but a positive integer stops the relay at boot with
 * "<NAME> must be a positive integer." (the reference relay's rule, which operators' tooling expects).
 */
export const LIMIT_TABLE = {
  /**
   * Installations are credentials the relay never evicts: a full relay refuses new ones (429
   * installation_limit_reached) rather than drop a phone. Inactive ones count until the operator prunes
   * them; never-paired, unseen ones expire (unpairedInstallationTtlHours).
   */
  maxInstallations: { env: 'RELAY_MAX_INSTALLATIONS', default: 50_000 },
  /** Re-pairing a profile adds a gateway without revoking the old one, so a long-lived installation accumulates gateways. */
  maxGatewaysPerInstallation: { env: 'RELAY_MAX_GATEWAYS_PER_INSTALLATION', default: 64 },
  /**
   * Event ids only stop a repeated delivery within 24 h and live in memory. At the per-installation
   * bound the installation forgets its own oldest; at the relay-wide one the installation holding the
   * most forgets its oldest. Neither rejects an event; they bound the ledger's memory.
   */
  maxEventIdsPerInstallation: { env: 'RELAY_MAX_EVENT_IDS_PER_INSTALLATION', default: 5_000 },
  maxEventIds: { env: 'RELAY_MAX_EVENT_IDS', default: 250_000 },
  /**
   * Parked decisions are stored rows of up to about 13 KB kept two hours: the active cap bounds what
   * waits for people, the retained cap how large a flood can make the store (and so admission to
   * 2,048 records an hour relay-wide).
   */
  maxActiveDecisions: { env: 'RELAY_MAX_ACTIVE_DECISIONS', default: 1_024 },
  maxRetainedDecisions: { env: 'RELAY_MAX_RETAINED_DECISIONS', default: 4_096 },
  /**
   * Process-wide budgets per class of action, separate so a flood of one kind cannot starve the
   * others; charged only after validation, capacity and the per-client windows, and never for a
   * no-op. Sized as backstops for a shared relay with thousands of installations, not quotas.
   */
  registrationsPerMinute: { env: 'RELAY_REGISTRATIONS_PER_MINUTE', default: 24 },
  eventsPerMinute: { env: 'RELAY_EVENTS_PER_MINUTE', default: 6_000 },
  deviceChangesPerMinute: { env: 'RELAY_DEVICE_CHANGES_PER_MINUTE', default: 240 },
  decisionActionsPerMinute: { env: 'RELAY_DECISION_ACTIONS_PER_MINUTE', default: 600 },
  revocationsPerMinute: { env: 'RELAY_REVOCATIONS_PER_MINUTE', default: 24 },
  /** Watch grants are in memory and each may hold calls open for 25 s: these bound that memory and those sockets. */
  maxWatchGrants: { env: 'RELAY_MAX_WATCH_GRANTS', default: 2_048 },
  maxWatchGrantsPerGateway: { env: 'RELAY_MAX_WATCH_GRANTS_PER_GATEWAY', default: 4 },
  watchCallsPerMinute: { env: 'RELAY_WATCH_CALLS_PER_MINUTE', default: 1_200 },
  /**
   * Each bridge may carry 96 KB/s each way (watchAudioBytesPerS below): 200 bound the relay's audio to
   * about 38 MB/s.
   */
  maxWatchAudioBridges: { env: 'RELAY_MAX_WATCH_AUDIO_BRIDGES', default: 200 },
  maxWatchAudioBridgesPerGateway: { env: 'RELAY_MAX_WATCH_AUDIO_BRIDGES_PER_GATEWAY', default: 2 },
  /**
   * Inbound audio one bridge socket may send, averaged over 5 s, before it is closed 4429 `too_fast`.
   * The default, 96 KB/s, is API.md §5's figure: room for a call's sealed audio, while one socket
   * cannot use the relay as a bulk pipe. The 5 s window is fixed (bridge-socket.ts). Tests that push
   * megabytes through real relay processes, whose clock they cannot step, set it high.
   */
  watchAudioBytesPerS: { env: 'RELAY_WATCH_AUDIO_BYTES_PER_S', default: 96 * 1024 },
  /** Every new call.requested may ring a phone (a VoIP push wakes it): a runaway host cannot ring all day. */
  callsPerInstallationPerDay: { env: 'RELAY_CALLS_PER_INSTALLATION_PER_DAY', default: 60 },
  /**
   * Apple Maps tokens handed to the hosts of one installation per 24 hours (`429 maps_token_limit`).
   * The token is the relay's one shared Maps credential and anyone can register an installation and
   * pair a host, so without a daily bound any self-made gateway could draw on the relay's Apple quota
   * all day. The seed gives a host at most 200 Apple calls a day: even a host that asked for a token
   * before every call stays under 200, and one that keeps it for its ~30 minutes needs about 50.
   */
  mapsTokensPerInstallationPerDay: { env: 'RELAY_MAPS_TOKENS_PER_INSTALLATION_PER_DAY', default: 200 },
  /**
   * An installation no host ever paired with, whose phone has not used its credential for this many
   * hours, is removed (store/unpaired-expiry.ts). Registration is anonymous, so without it a flood of
   * registrations holds RELAY_MAX_INSTALLATIONS for ever. A real phone pairs within minutes of
   * registering, or re-sends its state whenever the app opens, which counts as seen; a week lets a
   * user install the app and set up Hermes days later. While a flood keeps the registration budget
   * full it can hold at most RELAY_REGISTRATIONS_PER_MINUTE × this many slots, and it frees them this
   * long after it stops.
   */
  unpairedInstallationTtlHours: { env: 'RELAY_UNPAIRED_INSTALLATION_TTL_HOURS', default: 7 * 24 },
  /**
   * A request's headers and body must have fully arrived this long after its first byte (and a new
   * connection must complete its first request's headers within it), else the socket is closed (408).
   * Bodies are at most 32 KB, which the slowest phone link sends in a few seconds; without a bound a
   * client trickling one byte at a time holds a socket and its buffers forever. Long-polls and
   * WebSocket upgrades are not cut: the bound ends once the request has arrived, however long the
   * answer is held.
   */
  requestTimeoutMs: { env: 'RELAY_REQUEST_TIMEOUT_MS', default: 30_000 },
  /**
   * Open connections from one address (the socket's peer; not applied under TRUST_PROXY, where every
   * connection comes from the proxy, which then bounds its own clients). A phone holds a handful
   * (URLSession pools a few per host) and a host one per long-poll and audio socket, so 128 leaves
   * room for a household or a carrier NAT while one address cannot take the process's sockets.
   */
  maxConnectionsPerIp: { env: 'RELAY_MAX_CONNECTIONS_PER_IP', default: 128 },
} as const;

export type LimitName = keyof typeof LIMIT_TABLE;
export type Limits = Record<LimitName, number>;

/**
 * Bounds that are fixed in the reference relay (not configurable), kept here so every number the
 * relay enforces is found in one file.
 */
export const FIXED_LIMITS = {
  /** Per-installation caps of parked decisions (global ones are in LIMIT_TABLE). */
  maxActiveDecisionsPerInstallation: 32,
  maxRetainedDecisionsPerInstallation: 128,
  /** Per-key windows of 60 s unless noted. */
  registrationPerIp: 12,
  installationUpdatePerInstallation: 30,
  pairingPerInstallation: 5,
  claimPerIp: 20,
  eventPerInstallation: 30,
  decisionRespondPerIp: 60,
  decisionRespondPerInstallation: 30,
  decisionPollPerGateway: 120,
  decisionCancelPerGateway: 30,
  metaPerIp: 60,
  metaPerInstallation: 30,
  ringSettlePerIp: 30,
  /** Decision TTL from creation. */
  decisionTtlMs: 2 * 60 * 60 * 1000,
  pairingTtlMs: 10 * 60 * 1000,
  eventIdTtlMs: 24 * 60 * 60 * 1000,
  /** The reference's readJson bound, in characters. */
  maxBodyChars: 32_768,
  /**
   * The longest path parameter any route takes: a Live Activity push token (64–200 hex) on DELETE.
   * Fastify's default of 100 answered longer ones 414 in its own error shape, so a token the PUT
   * accepted could never be deleted; decision ids (≤ 128) were cut off the same way.
   */
  maxPathParamChars: 200,
  /** Rings and the sessions the phone stores for a Watch-answered ring. */
  ringTtlMs: 10 * 60 * 1000,
  maxRings: 10_000,
  ringSessionTtlMs: 2 * 60 * 1000,
  maxRingSessionChars: 98_304,
  maxRingSessionBytesTotal: 32 * 1024 * 1024,
  maxRingSessionWaiters: 2,
  maxRingSessionWaitMs: 20_000,
  /** APNs accepts 4 KB; the relay keeps headroom and drops structured content past this. */
  maxStructuredPayloadBytes: 3_800,
  /**
   * Tries of one conditional decision write. Each failed try means another write to the same decision
   * succeeded, and a decision takes at most 8 qid answers and one release, so 16 is never reached by
   * honest contention; it only stops a loop if something outside the relay rewrote the row.
   */
  maxDecisionWriteAttempts: 16,
  /** How often expired unpaired installations are removed (and once at start). */
  unpairedSweepIntervalMs: 60 * 60 * 1000,
  /** A full relay sweeps before refusing a registration at most this often (a sweep reads every unpaired row). */
  unpairedCapacitySweepEveryMs: 60 * 1000,
  /**
   * A phone's use of its credential is written at most this often (and at most every 1/24 of the
   * unpaired TTL), so authenticated reads stay reads; only unpaired installations are stamped at all.
   */
  seenStampEveryMs: 60 * 60 * 1000,
  /** Installations examined per statement by the unpaired sweep (one short write lock each on SQLite). */
  unpairedSweepBatch: 500,
  /** Deferred gateway last-seen / plugin-version writes. */
  deferredWriteDelayMs: 5_000,
} as const;

export class LimitError extends Error {}

/** Reads every RELAY_* bound; throws LimitError naming the first bad variable. */
export function readLimits(env: NodeJS.ProcessEnv): Limits {
  const limits = {} as Limits;
  for (const [name, spec] of Object.entries(LIMIT_TABLE) as [LimitName, (typeof LIMIT_TABLE)[LimitName]][]) {
    limits[name] = positiveInteger(env, spec.env) ?? spec.default;
  }
  return limits;
}

/** Unset or blank → undefined; a trimmed `^\d+$` safe integer > 0 → it; else LimitError. */
export function positiveInteger(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const trimmed = raw.trim();
  const value = Number(trimmed);
  if (!/^\d+$/.test(trimmed) || !Number.isSafeInteger(value) || value <= 0) {
    throw new LimitError(`${name} must be a positive integer.`);
  }
  return value;
}

export function defaultLimits(): Limits {
  return readLimits({});
}
