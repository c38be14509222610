import { randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { hermesApiClient, type HermesApi } from '@conduit/contracts/hermes/api-client';
import { WireError } from '@conduit/contracts/server';
import { ApprovalBook } from './cards/approval-book.js';
import { ApprovalCards } from './cards/approval-cards.js';
import { ClarifyLoop, type ClarifyPairing } from './cards/clarify-loop.js';
import type { HostConfig } from './config.js';
import { DeliveryQueue } from './delivery/delivery-queue.js';
import { privacyPrepare, readClarifyPairing } from './delivery/pairing-adapter.js';
import { httpRelayGateway, type RelayGateway } from './delivery/relay-gateway.js';
import { relaySender, type PrepareEvent } from './delivery/relay-sender.js';
import { Spool } from './delivery/spool.js';
import { bearerVerifier, dashboardVerifier, type CallerVerifier } from './fronting/caller-verification.js';
import { guardedServer } from './fronting/listener.js';
import { proxyHttp, proxyUpgrade } from './fronting/proxy.js';
import { hostPolicy } from './fronting/request-guard.js';
import { HOST_CONTROL_PREFIX } from '@conduit/contracts/dashboard/control';
import { controlRoutes } from './control/control-routes.js';
import { readOrCreateControlToken } from './control/control-token.js';
import { authenticatedRoutes } from './fronting/route-auth.js';
import { socketCallerCheck, WebSocketTickets, WS_TICKET_PATH, wsTicketAnswer } from './fronting/socket-credentials.js';
import { routeUpgrade } from './kernel/socket-route.js';
import { perMinute } from './kernel/rate-window.js';
import { AppSubmissions } from './notifier/app-submissions.js';
import { DesktopSelectionPublisher } from './notifier/desktop-selection.js';
import { gatewayObserver } from './notifier/gateway-observer.js';
import { Notifier, type ProfileScope } from './notifier/notifier.js';
import { PLUGIN_CAPABILITIES } from './notifier/events.js';
import { MCP_PATH, mcpRoutes, toolsNeedingContext } from './mcp/mcp-endpoint.js';
import { readOrCreateMcpToken } from './mcp/mcp-token.js';
import { HostMetrics, METRICS_PATH } from './metrics.js';
import { readSessionTitle } from './notifier/session-titles.js';
import { createRelayApi } from './pairing/relay-api.js';
import { registerPairingRoutes } from './pairing/routes.js';
import { profileOfHook, resolveProfile } from './fronting/profiles.js';
import { approvalRoutes } from './routes/approvals.js';
import { capabilityRoutes } from './routes/capabilities.js';
import { HOOK_PATH, hookRoutes } from './routes/hooks.js';
import { notificationSettingsRoutes } from './routes/notification-settings.js';
import { ProfileSettings } from './settings/profile-settings.js';
import { HOST_FEATURES } from './features/index.js';
import { HostActivity } from './kernel/activity.js';
import { conduitFirstLine, sharedDataOf } from './kernel/phone-data/conduit-first.js';
import { selfRestartRoute, type SelfRestarter } from './routes/self-restart.js';
import { installRoot, SelfUpdater, selfUpdateRoute } from './routes/self-update.js';
import { postPluginUpdate } from '@conduit/contracts/dashboard/capabilities';
import type { FeatureKernel, HostFeature } from './kernel/feature.js';
import { systemTimers } from './kernel/timers.js';
import { CALL_SWEEP_MS, CallDispatcher } from './features/calls/call-dispatch.js';
import { ToolContextSigner } from './mcp/tool-context.js';
import { CallWatchJobs, apiProfileOf } from './features/calls/watch-jobs.js';
// Calls ask where the user is through a port; location answers it here, so neither imports the other.
import { whereabouts } from './features/location/index.js';
import { LiveActivityReporter } from './features/live-activities/reporter.js';
import { progressPoster, progressTarget } from './features/live-activities/progress-client.js';
import { liveActivitiesCapability } from './features/live-activities/capability.js';
import { isLoopbackHost } from './kernel/loopback.js';

/** Where our own routes live; everything else belongs to the Hermes dashboard we front. */
export const PLUGIN_PREFIX = '/api/plugins/conduit_push/';

/** Refused socket callers host-wide before upgrades are answered 403 unaccepted (ROUTES.md, Grok Live auth). */
const SOCKET_REFUSALS_PER_MINUTE = 30;

/** Seams a test or benchmark may replace; production uses the defaults. */
export interface HostDeps {
  prepare: PrepareEvent;
  readPairing: (profile: ProfileScope) => Promise<ClarifyPairing | null>;
  gateway: RelayGateway;
  sleep: (ms: number) => Promise<void>;
  hermes: HermesApi | null;
  /** Told each control API procedure called (tests prove a CLI went through the service). */
  onControlCall?: (procedure: string) => void;
  /** The features registered (default: every feature, HOST_FEATURES); capabilities list theirs. */
  features: readonly HostFeature[];
  /** How this process restarts itself (routes/self-restart.ts); null: POST /self/restart answers 501. */
  restarter: SelfRestarter | null;
  /** Brings this service's checkout up to date for the app's Update plugin (routes/self-update.ts). */
  updater: SelfUpdater;
}

export interface Host {
  app: FastifyInstance;
  /** The secret the hook bridge presents; written to the runtime file, never logged. */
  hookToken: string;
  queue: DeliveryQueue;
  notifier: Notifier;
  /** Calls from Hermes: watched jobs' turn ends and holds that ran out (features/calls). */
  calls: CallDispatcher;
  /** Lock Screen progress reported to the relay (features/live-activities). */
  progress: LiveActivityReporter;
  /** Random id of this process's start (GET /capabilities, POST /self/restart). */
  bootId: string;
}

/**
 * Why feature routes with a credential of their own are refused here, or null. In front of a Hermes
 * dashboard that has no login of its own, reachable beyond loopback because the operator accepted it,
 * such a credential would sit beside no sign-in at all: the seed's "a public dashboard with no other
 * sign-in provider" (see exposure.ts).
 */
function tokenRoutesRefusal(config: HostConfig): string | null {
  if (config.fronting.mode !== 'dashboard' || isLoopbackHost(config.host) || !config.allowOpenDashboard) return null;
  return (
    'This host is reachable beyond loopback in front of a Hermes dashboard without a login of its own ' +
    '(CONDUIT_HOST_ALLOW_OPEN_DASHBOARD); give the dashboard a sign-in and unset that setting'
  );
}

/** Whether a canonical target (see request-guard.ts) is ours; everything else goes to the dashboard. */
function isOurs(url: string | undefined): boolean {
  const pathname = (url ?? '/').split('?')[0] ?? '/';
  return (
    pathname.startsWith(PLUGIN_PREFIX) ||
    pathname === PLUGIN_PREFIX.slice(0, -1) ||
    pathname === HOOK_PATH ||
    pathname === MCP_PATH ||
    pathname === METRICS_PATH ||
    pathname === postPluginUpdate.path ||
    pathname.startsWith(`${HOST_CONTROL_PREFIX}/`)
  );
}

/** Builds the host service: plugin routes, hook endpoint, notifier and delivery, and the dashboard proxy. */
export async function buildHost(config: HostConfig, overrides: Partial<HostDeps> = {}): Promise<Host> {
  const { clock, log, limits } = config;
  const upstream = config.fronting.mode === 'dashboard' ? new URL(config.fronting.dashboardUrl) : null;
  // Gateway sockets through the proxy: the prompts apps send (to place their turns' replies) and the
  // chat Desktop has selected (published for the two-minute rule).
  const submissions = new AppSubmissions(clock);
  const desktopSelection = new DesktopSelectionPublisher(log);
  const observeGateway = gatewayObserver({
    submissions,
    selection: desktopSelection,
    homeOf: (profile) => profileOfHook(config.hermesHome, profile)?.home ?? null,
  });
  const verifier: CallerVerifier =
    config.fronting.mode === 'dashboard'
      ? dashboardVerifier({
          dashboardUrl: config.fronting.dashboardUrl,
          cacheMs: limits.authCacheMs,
          timeoutMs: limits.authTimeoutMs,
          clock,
        })
      : bearerVerifier(config.fronting.bearerToken);
  const tickets = new WebSocketTickets(clock);
  // The dashboard mints WebSocket tickets for its signed-in callers; those on their way to a Conduit
  // app pass through here, and are recorded so our socket routes accept them (once, within 30 s).
  const recordTicket = (status: number, body: Buffer): void => {
    if (status !== 200) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return;
    }
    const answer = wsTicketAnswer.safeParse(parsed);
    if (answer.success) tickets.record(answer.data.ticket, (answer.data.ttl_seconds ?? 30) * 1000);
  };

  const app = Fastify({
    logger: false,
    bodyLimit: 1024 * 1024,
    // Every request is canonicalised and checked at the browser boundary before it is routed or
    // proxied (fronting/listener.ts); the proxy decision is then made on the target the router sees.
    serverFactory: (handler) =>
      guardedServer({
        policy: hostPolicy(config.allowedHosts ?? []),
        bounds: {
          headersTimeoutMs: limits.headersTimeoutMs,
          requestTimeoutMs: limits.requestTimeoutMs,
          connectionsPerIp: limits.connectionsPerIp,
        },
        onRequest: (req, res) => {
          if (upstream && !isOurs(req.url)) {
            const mintsTicket = req.method === 'POST' && (req.url ?? '').split('?')[0] === WS_TICKET_PATH;
            proxyHttp(req, res, upstream, mintsTicket ? recordTicket : undefined);
          } else handler(req, res);
        },
        onUpgrade: (req, socket, head) => {
          if (upstream && !isOurs(req.url)) proxyUpgrade(req, socket, head, upstream, observeGateway);
          // Our sockets go through the router, so the matched route's caller check runs before any accept.
          else routeUpgrade(handler, req, socket, head);
        },
      }),
  });
  app.setErrorHandler((error, request, reply) => {
    if (error instanceof WireError) return reply.status(error.status).send(error.body());
    const status = (error as { statusCode?: unknown }).statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      if (request.url.startsWith(HOOK_PATH)) log.warn('malformed hook payload dropped', { status });
      return reply.status(status).send({ error: status === 413 ? 'payload_too_large' : 'invalid_json' });
    }
    log.error('request failed', {
      path: request.url.split('?')[0],
      error: error instanceof Error ? error.name : 'error',
    });
    return reply.status(500).send({ error: 'internal_error' });
  });
  app.setNotFoundHandler((_request, reply) => reply.status(404).send({ error: 'not_found' }));
  const metrics = new HostMetrics();
  metrics.observeRequests(app);

  const deps: HostDeps = {
    prepare: overrides.prepare ?? privacyPrepare(clock),
    readPairing: overrides.readPairing ?? readClarifyPairing,
    gateway:
      overrides.gateway ??
      httpRelayGateway({
        userAgent: `Conduit-Host/${config.loadedVersion}`,
        timeoutMs: limits.relayTimeoutMs,
        ...(config.relayFetch ? { fetch: config.relayFetch } : {}),
      }),
    sleep: overrides.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    features: overrides.features ?? HOST_FEATURES,
    restarter: overrides.restarter ?? null,
    updater: overrides.updater ?? new SelfUpdater({ root: installRoot() }),
    hermes:
      overrides.hermes !== undefined
        ? overrides.hermes
        : config.hermesApi
          ? hermesApiClient({ url: config.hermesApi.url, key: config.hermesApi.key, timeoutMs: limits.relayTimeoutMs })
          : null,
  };
  const approvals = new ApprovalBook(clock);
  const settings = new ProfileSettings();
  const spool = new Spool(path.join(config.stateDir, 'spool'), log);
  const sender = metrics.instrumentSender(relaySender(deps.gateway, deps.prepare));
  const queue = new DeliveryQueue(
    sender,
    {
      capacity: limits.queueCapacity,
      maxAgeMs: limits.spoolMaxAgeS * 1000,
      concurrency: limits.deliveryConcurrency,
      backoff: { baseMs: limits.retryBaseMs, maxMs: limits.retryMaxMs },
    },
    clock,
    log,
    spool,
  );
  metrics.trackQueue(queue);
  const sessionTitle = async (profile: ProfileScope, sessionId: string) => readSessionTitle(profile.home, sessionId);
  const clarify = new ClarifyLoop({
    clock,
    log,
    pluginVersion: config.loadedVersion,
    gateway: deps.gateway,
    readPairing: deps.readPairing,
    enqueueTracked: (profile, event, onSettled) => queue.enqueueTracked(profile, event, onSettled),
    sessionTitle,
    sleep: deps.sleep,
    pollBaseMs: limits.clarifyPollMs,
    budgetMs: limits.clarifyBudgetS * 1000,
  });
  const approvalCards = new ApprovalCards({
    clock,
    log,
    book: approvals,
    hermes: deps.hermes,
    gateway: deps.gateway,
    readPairing: deps.readPairing,
    enqueue: (profile, event) => queue.enqueue(profile, event),
    enqueueTracked: (profile, event, onSettled) => queue.enqueueTracked(profile, event, onSettled),
    sleep: deps.sleep,
    pollBaseMs: limits.clarifyPollMs,
  });
  const calls = new CallDispatcher({
    clock,
    log,
    pluginVersion: config.loadedVersion,
    hermesHome: config.hermesHome,
    send: (profile, event) => sender.send(profile, event),
    enqueue: (profile, event) => queue.enqueue(profile, event),
    sleep: deps.sleep,
    timers: config.timers ?? systemTimers,
    // "No calls at places": the latest fix that still counts, from the profile's location store.
    whereIs: (home) => whereabouts(home, clock.now() / 1000),
  });
  const toolContext = new ToolContextSigner(() => clock.now());
  const progress = new LiveActivityReporter({
    clock,
    timers: config.timers ?? systemTimers,
    log,
    target: progressTarget,
    post: progressPoster({
      userAgent: `Conduit-Host/${config.loadedVersion}`,
      timeoutMs: limits.relayTimeoutMs,
      ...(config.relayFetch ? { fetch: config.relayFetch } : {}),
    }),
  });
  const notifier = new Notifier({
    clock,
    log,
    pluginVersion: config.loadedVersion,
    replyHoldMs: limits.replyHoldMs,
    enqueue: (profile, event) => queue.enqueue(profile, event),
    isCronMuted: (profile, jobId) => settings.cron(profile).isMuted(jobId),
    isReplySourceOn: (profile, source) => settings.replySources(profile).isOn(source),
    sessionTitle,
    appTurnSource: (profile, userMessage, startedAt) => submissions.placeTurn(profile.name, userMessage, startedAt),
    approvals: approvalCards,
    calls: {
      async turnEnded(profile, sessionId, outcome, usual) {
        await calls.turnEnded(profile, sessionId, outcome, usual);
        // Every turn end also looks for holds that ran out, so a restart never loses a call.
        calls.sweepAfterTurn(profile);
      },
      takeNote: (profile, sessionId) => calls.takeNote(profile, sessionId),
      alertRaised: (profile, sessionId, kind, reason, seed) =>
        calls.alertRaised(profile, sessionId, kind, reason, seed),
      alertSettled: (profile, sessionId, kind) => calls.alertSettled(profile, sessionId, kind),
    },
    progress,
    conduitFirst: conduitFirstLine(() => clock.now(), sharedDataOf(deps.features)),
    toolContext: {
      tools: toolsNeedingContext(deps.features),
      mint: (profile, sessionId, turnId, isChild, cronJob) =>
        toolContext.mint({ home: profile.home, sessionId, turnId, isChild, cronJobId: cronJob ?? undefined }),
    },
    clarify,
  });

  const hookToken = randomBytes(32).toString('base64url');
  // The one public plugin route: the app reads capabilities before it has credentials.
  const bootId = randomUUID();
  const activity = new HostActivity();
  capabilityRoutes(app, config, deps.features, {
    bootId,
    canRestart: deps.restarter?.refusal() === null,
    whenWorking: [liveActivitiesCapability(progress, config.hermesHome)],
  });
  const kernel: FeatureKernel = {
    hermesHome: config.hermesHome,
    clock,
    timers: config.timers ?? systemTimers,
    log,
    serviceEnv: config.serviceEnv ?? {},
    upstreams: config.upstreams ?? {},
    tokenRoutesRefusal: tokenRoutesRefusal(config),
    activity,
    // Place rules keep their cron jobs through the same Hermes jobs client as call watches.
    hermesJobs: deps.hermes ? { api: deps.hermes, apiProfile: apiProfileOf(config.hermesApi?.url) } : null,
    // Watch jobs run their chats through the same client.
    hermesRuns: deps.hermes
      ? { api: deps.hermes, apiProfile: apiProfileOf(config.hermesApi?.url), url: config.hermesApi?.url ?? null }
      : null,
    relayGateway: deps.gateway,
    loadedVersion: config.loadedVersion,
    // The voice-tools feature serves what the registered features declare, in their order.
    voiceTools: deps.features.flatMap((feature) => feature.voiceTools ?? []),
  };
  // Every other plugin route accepts only callers the dashboard accepts (or the standalone token).
  // The check is a hook of this encapsulated scope, so it runs on the route the router matched —
  // never a test of the raw URL, which percent-escapes and absolute-form targets spell differently.
  await app.register(async (plugin) => {
    plugin.addHook(
      'onRequest',
      authenticatedRoutes(verifier, {
        check: socketCallerCheck(verifier, tickets, config.fronting.mode),
        refusals: perMinute(SOCKET_REFUSALS_PER_MINUTE, clock),
      }),
    );
    if (config.fronting.mode === 'standalone') {
      // Standalone, this service is the dashboard a Conduit app signs in to, so it mints the tickets.
      plugin.post(WS_TICKET_PATH, async (_request, reply) =>
        reply.header('cache-control', 'no-store').send({ ticket: tickets.mint(), ttl_seconds: 30 }),
      );
    }
    notificationSettingsRoutes(plugin, config.hermesHome, settings);
    approvalRoutes(plugin, { hermesHome: config.hermesHome, cards: approvalCards });
    registerPairingRoutes(plugin, {
      resolveProfileHome: (requested) => {
        const profile = resolveProfile(config.hermesHome, requested);
        return { home: profile.home, profile: profile.name };
      },
      relay: createRelayApi({
        userAgent: `Conduit-Host/${config.loadedVersion}`,
        timeoutMs: limits.relayTimeoutMs,
        ...(config.relayFetch ? { fetch: config.relayFetch } : {}),
      }),
      clock: () => clock.now(),
      hostname: () => os.hostname(),
      identity: { version: config.loadedVersion, capabilities: [...PLUGIN_CAPABILITIES] },
    });
    selfRestartRoute(plugin, { config, bootId, activity, restarter: deps.restarter, log });
    selfUpdateRoute(plugin, { updater: deps.updater, log });
    // Each feature is its own encapsulated plugin: its body parsing and error shape stay its own.
    for (const feature of deps.features) await plugin.register(async (scope) => feature.register(scope, kernel));
  });
  // Routes that take a feature's own credential: a scope beside the authenticated one, so its caller
  // check is theirs alone and their credential opens nothing else.
  for (const feature of deps.features) {
    const register = feature.registerTokenRoutes;
    if (register) await app.register(async (scope) => register(scope, kernel));
  }
  await metrics.routes(app, { verifier, metricsToken: config.metricsToken });
  hookRoutes(app, { hermesHome: config.hermesHome, hookToken, bodyLimit: limits.hookBodyBytes, notifier, log });
  mcpRoutes(app, {
    hermesHome: config.hermesHome,
    token: await readOrCreateMcpToken(config.stateDir),
    settings,
    version: config.loadedVersion,
    log,
    clock,
    toolContext,
    calls,
    watchJobs: deps.hermes
      ? new CallWatchJobs({ api: deps.hermes, apiProfile: apiProfileOf(config.hermesApi?.url), clock })
      : null,
    features: deps.features,
    kernel,
  });

  await controlRoutes(app, await readOrCreateControlToken(config.stateDir), {
    hermesHome: config.hermesHome,
    stateDir: config.stateDir,
    version: config.loadedVersion,
    startedAtMs: clock.now(),
    clock,
    hostname: () => os.hostname(),
    randomBytes: (length) => new Uint8Array(randomBytes(length)),
    settings,
    queue,
    relay: createRelayApi({
      userAgent: `Conduit-Host/${config.loadedVersion}`,
      timeoutMs: limits.relayTimeoutMs,
      ...(config.relayFetch ? { fetch: config.relayFetch } : {}),
    }),
    identity: { version: config.loadedVersion, capabilities: [...PLUGIN_CAPABILITIES] },
    ...(overrides.onControlCall ? { onCall: overrides.onControlCall } : {}),
  });

  await queue.start();
  const flushTimer = setInterval(() => notifier.flushDueReplies(), Math.max(50, Math.min(1000, limits.replyHoldMs)));
  flushTimer.unref();
  const callSweepTimer = setInterval(() => void calls.sweep(), CALL_SWEEP_MS);
  callSweepTimer.unref();
  // Before the server stops accepting: release held clarify calls so closing never waits on them.
  app.addHook('preClose', async () => {
    clarify.shutdown();
    await approvalCards.shutdown();
  });
  app.addHook('onClose', async () => {
    clearInterval(flushTimer);
    clearInterval(callSweepTimer);
    progress.stop();
    desktopSelection.stop();
    await queue.stop();
  });
  await app.ready();
  return { app, hookToken, queue, notifier, calls, progress, bootId };
}

/** Builds a ready host service app from its configuration. */
export async function buildApp(config: HostConfig): Promise<FastifyInstance> {
  return (await buildHost(config)).app;
}
