import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { createApnsSender } from './apns/index.js';
import type { ApnsSender } from './apns/types.js';
import type { RelayConfig } from './config.js';
import { findDevice, findGateway, type RelayContext, type RelayLog } from './relay-context.js';
import { MemoryEventLedger } from './ephemeral/event-ledger.js';
import { MemoryRateLimiter } from './ephemeral/rate-limiter.js';
import { MemoryRingSessionStore } from './ephemeral/ring-sessions.js';
import { MemoryRingRegistry } from './ephemeral/rings.js';
import { clientAddress } from './http/client-ip.js';
import { answerClientError, guardConnections, requestTimeoutOptions } from './http/connection-guard.js';
import { acceptAnyBodyAsText } from './http/read-json.js';
import { applyWireConventions, type AccessLog } from './http/wire-conventions.js';
import { FIXED_LIMITS } from './limits.js';
import { RelayMetrics } from './metrics.js';
import { decisionRoutes } from './routes/decisions.js';
import { eventRoutes } from './routes/events.js';
import { healthRoutes } from './routes/health.js';
import { installationRoutes } from './routes/installations.js';
import { CORE_CAPABILITIES, metaRoutes } from './routes/meta.js';
import { pairingRoutes } from './routes/pairings.js';
import { ringRoutes } from './routes/rings.js';
import type { IndexInvalidation } from './store/credential-index.js';
import { DeferredActivity } from './store/deferred-activity.js';
import { IndexedStore } from './store/indexed-store.js';
import { openPrismaStore, PrismaStore } from './store/prisma-store.js';
import type { RelayStore } from './store/relay-store.js';
import { UnpairedExpiry } from './store/unpaired-expiry.js';
import { registerWatchFeatures, WATCH_CAPABILITIES } from './watch/index.js';

/** What tests (and main.ts) may inject; everything else is built from the configuration. */
export interface RelayDeps {
  store?: RelayStore;
  apns?: ApnsSender;
  now?: () => number;
  random?: (size: number) => Buffer;
  log?: RelayLog;
  accessLog?: AccessLog;
  /** How the credential index hears of other processes' writes (default: REDIS_URL's, else none). */
  indexInvalidation?: IndexInvalidation;
}

const jsonLine =
  (write: (text: string) => void) =>
  (line: Record<string, unknown>): void => {
    write(`${JSON.stringify(line)}\n`);
  };

let stdoutLines: ((text: string) => void) | undefined;

/**
 * stdout, a turn of the event loop at a time: the lines written during one turn go out in one write.
 * On a pipe (a supervisor, a container) every write is a system call of its own that also wakes the
 * reader: at thousands of requests a second, one access-log line per call was about 5 % of the
 * relay's CPU (bench:relay-cold's profile). Lines keep their order (the info log and the access log
 * share this), and whatever is pending is written on exit.
 */
function batchedStdout(): (text: string) => void {
  if (stdoutLines) return stdoutLines;
  let pending = '';
  const flush = () => {
    if (pending === '') return;
    const text = pending;
    pending = '';
    process.stdout.write(text);
  };
  process.once('exit', flush);
  stdoutLines = (text) => {
    if (pending === '') setImmediate(flush);
    pending += text;
  };
  return stdoutLines;
}

const writeStderr = (text: string): void => {
  process.stderr.write(text);
};

/** Like the reference (console.log / console.warn / console.error): info on stdout, warnings and errors on stderr. */
function defaultLog(): RelayLog {
  const info = jsonLine(batchedStdout());
  const problem = jsonLine(writeStderr);
  return (level, message, fields) => (level === 'info' ? info : problem)({ level, message, ...fields });
}

/** A promise-chain mutex: the next holder starts when the previous one settles. */
function createLock(): <T>(work: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(work: () => Promise<T>) => {
    const run = tail.then(work, work);
    tail = run.catch(() => undefined);
    return run;
  };
}

type SchemaCompilers = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type ValidatorFactory = NonNullable<SchemaCompilers['buildValidator']>;
type SerializerFactory = NonNullable<SchemaCompilers['buildSerializer']>;
const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'));

/**
 * Fastify's own schema compilers (ajv, fast-json-stringify), loaded by Fastify only if a route ever
 * has a JSON schema. No relay route has one (bindRoute validates with the contracts' Zod schemas),
 * and building them when the instance is created was a quarter of the relay's start.
 */
const lazySchemaCompilers: SchemaCompilers = {
  buildValidator: ((...args: Parameters<ValidatorFactory>) =>
    (fastifyRequire('@fastify/ajv-compiler') as () => ValidatorFactory)()(...args)) as ValidatorFactory,
  buildSerializer: ((...args: Parameters<SerializerFactory>) =>
    (fastifyRequire('@fastify/fast-json-stringify-compiler') as () => SerializerFactory)()(
      ...args,
    )) as SerializerFactory,
};

/**
 * Builds a ready relay app from its configuration; nothing global, so tests build many. The store is
 * opened (and migrated) here unless injected; closing the app flushes deferred writes and closes it.
 */
export async function buildApp(config: RelayConfig, deps: RelayDeps = {}): Promise<FastifyInstance> {
  const now = deps.now ?? Date.now;
  const log = deps.log ?? defaultLog();
  const accessLog = deps.accessLog ?? jsonLine(batchedStdout());
  const database = deps.store ?? (await openPrismaStore(config.databaseUrl));
  const ledgerBounds = {
    ttlMs: FIXED_LIMITS.eventIdTtlMs,
    perInstallation: config.limits.maxEventIdsPerInstallation,
    total: config.limits.maxEventIds,
  };
  // REDIS_URL: one replica of several; the short-lived state they must agree on lives in Redis. Loaded
  // only then: one process never loads the Redis client.
  const sharedState = config.sharedState
    ? await (
        await import('./cluster/shared-state.js')
      ).openSharedState(
        config.sharedState,
        ledgerBounds,
        {
          ringTtlMs: FIXED_LIMITS.ringTtlMs,
          sessionTtlMs: FIXED_LIMITS.ringSessionTtlMs,
          maxSessionWaiters: FIXED_LIMITS.maxRingSessionWaiters,
          maxSessionWaitMs: FIXED_LIMITS.maxRingSessionWaitMs,
        },
        now,
        log,
      )
    : undefined;
  let listening = false;
  const indexed = new IndexedStore(database, undefined, deps.indexInvalidation ?? sharedState?.invalidation, {
    sharedCapacity: sharedState !== undefined,
    verifyMisses: sharedState !== undefined,
    // Other replicas' changes may have been missed: load the index again (lookups ask the database
    // meanwhile). Before the port opens, the load that starts then covers it.
    onResync: () => {
      if (listening) loadIndex(() => indexed.forgetInstallations());
    },
  });
  const store: RelayStore = indexed;
  let indexLoad: Promise<unknown> = Promise.resolve();
  // In the background: the relay answers from the start, asking the database until the index is
  // complete, so boot time does not grow with the store (README, credential index). An app that never
  // listens (app.inject) answers from the database throughout.
  const loadIndex = (load: () => Promise<{ installations: number; gateways: number } | null>) => {
    const started = performance.now();
    indexLoad = load().then(
      (loaded) => {
        if (loaded) {
          log('info', 'credential index loaded', { ...loaded, ms: Math.round(performance.now() - started) });
        }
      },
      (error: unknown) =>
        log('error', 'credential index load failed, answering from the database', {
          error: error instanceof Error ? error.message : String(error),
        }),
    );
  };
  const metrics = new RelayMetrics();
  const apns = metrics.instrumentApns(deps.apns ?? createApnsSender(config.apns));
  const activity = new DeferredActivity(
    store,
    FIXED_LIMITS.deferredWriteDelayMs,
    (error) =>
      log('error', 'deferred gateway write failed', { error: error instanceof Error ? error.message : String(error) }),
    sharedState?.activityOverlay,
  );
  const unpaired = new UnpairedExpiry(
    store,
    config.limits.unpairedInstallationTtlHours * 60 * 60 * 1000,
    now,
    (error) =>
      log('error', 'unpaired installation expiry failed', {
        error: error instanceof Error ? error.message : String(error),
      }),
    (count) => log('info', 'expired unpaired installations', { count }),
  );
  const context: RelayContext = {
    config,
    store,
    limiter: sharedState?.limiter ?? new MemoryRateLimiter(now),
    ledger: sharedState?.ledger ?? new MemoryEventLedger(ledgerBounds, now),
    rings:
      sharedState?.rings ?? new MemoryRingRegistry({ ttlMs: FIXED_LIMITS.ringTtlMs, max: FIXED_LIMITS.maxRings }, now),
    ringSessions:
      sharedState?.ringSessions ??
      new MemoryRingSessionStore(
        {
          ttlMs: FIXED_LIMITS.ringSessionTtlMs,
          maxTotalChars: FIXED_LIMITS.maxRingSessionBytesTotal,
          maxWaiters: FIXED_LIMITS.maxRingSessionWaiters,
        },
        now,
      ),
    apns,
    activity,
    now,
    random: deps.random ?? randomBytes,
    log,
    // Replicas: one lock for all of them, or racing parks on two replicas pass the capacity together.
    decisionLock: sharedState?.decisionLock ?? createLock(),
    unpaired,
  };

  const { requestTimeoutMs } = config.limits;
  const app = Fastify({
    logger: false,
    schemaController: { compilersFactory: lazySchemaCompilers },
    bodyLimit: FIXED_LIMITS.maxBodyChars * 4,
    // The reference routes on method and path: HEAD is an unknown route there (404 not_found).
    exposeHeadRoutes: false,
    // Fastify sets the server's requestTimeout from its own option (0 = none) after creating it.
    requestTimeout: requestTimeoutMs,
    http: requestTimeoutOptions(requestTimeoutMs),
    clientErrorHandler: answerClientError,
    routerOptions: { maxParamLength: FIXED_LIMITS.maxPathParamChars },
  });
  guardConnections(app.server, {
    requestTimeoutMs,
    // Behind a trusted proxy every connection is the proxy's: counting them per address would cap
    // the whole relay, so the proxy bounds its own clients instead.
    maxConnectionsPerIp: config.trustedProxyHops === 0 ? config.limits.maxConnectionsPerIp : undefined,
  });
  acceptAnyBodyAsText(app);
  applyWireConventions(app, accessLog, (error) =>
    log('error', 'request failed', { error: error instanceof Error ? error.message : String(error) }),
  );
  metrics.observeRequests(app);
  healthRoutes(app);
  metrics.routes(app, config.metricsToken);
  installationRoutes(app, context);
  pairingRoutes(app, context);
  eventRoutes(app, context);
  decisionRoutes(app, context);
  ringRoutes(app, context);
  metaRoutes(app, context, [...CORE_CAPABILITIES.slice(0, 4), ...WATCH_CAPABILITIES, ...CORE_CAPABILITIES.slice(4)]);
  registerWatchFeatures(app, {
    authenticateGateway: async (authorization) => {
      const found = await findGateway(context, authorization);
      return found ? { installationId: found.installation.id, gatewayId: found.gateway.id } : null;
    },
    authenticateDevice: async (authorization) => {
      const installation = await findDevice(context, authorization);
      return installation ? { installationId: installation.id } : null;
    },
    apns,
    rateLimit: context.limiter,
    clientIp: (request) => clientAddress(request, config.trustedProxyHops),
    config: {
      ...config.watch,
      publicUrl: config.publicUrl,
      apnsTopic: config.apnsTopic,
      maxGrants: config.limits.maxWatchGrants,
      maxGrantsPerGateway: config.limits.maxWatchGrantsPerGateway,
      watchCallsPerMinute: config.limits.watchCallsPerMinute,
      maxAudioBridges: config.limits.maxWatchAudioBridges,
      maxAudioBridgesPerGateway: config.limits.maxWatchAudioBridgesPerGateway,
      audioBytesPerS: config.limits.watchAudioBytesPerS,
      mapsTokensPerInstallationPerDay: config.limits.mapsTokensPerInstallationPerDay,
    },
    now,
    ...(sharedState ? { distribute: sharedState.distributeWatch, liveActivities: sharedState.liveActivities } : {}),
  });
  // The admin API's module (tRPC, the procedures' OpenAPI metadata) loads only when ADMIN_TOKEN turns
  // the API on: imported at start, it was a third of the relay's boot.
  if (database instanceof PrismaStore && config.adminToken !== undefined) {
    const { adminRoutes } = await import('./admin/admin-routes.js');
    await adminRoutes(app, config.adminToken, {
      config,
      store,
      db: database.db,
      forgetInstallations: () => loadIndex(() => indexed.forgetInstallations()),
      now,
    });
  }
  app.addHook('onClose', async () => {
    await indexLoad;
    await unpaired.stop();
    await activity.flush();
    await apns.close();
    if (!deps.store) await database.close();
    await sharedState?.close();
  });
  // Once the port is open, so the first page never delays the first answer more than a page does.
  app.addHook('onListen', async () => {
    listening = true;
    loadIndex(() => indexed.loadIndex());
  });
  await app.ready();
  unpaired.start();
  return app;
}
