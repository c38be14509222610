import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { AgentBackend } from './agent/agent-backend.js';
import type { VoiceDetectorFactory } from './audio/types.js';
import { CallRegistry } from './calls/call-registry.js';
import type { CallServices } from './calls/realtime-call.js';
import type { VoiceConfig } from './config.js';
import { createLogger, type Logger } from './log.js';
import { MediaSender } from './media/media-sender.js';
import { SharedFrameClock, type FrameClock } from './media/frame-clock.js';
import { warmUpWebrtc } from './media/warm-up.js';
import { VoiceMetrics } from './metrics.js';
import { providersFromConfig, speechInUse, warmUpConfiguredTurnPath } from './pipeline/providers-from-config.js';
import type { SpeechToText, TextToSpeech } from './providers/types.js';
import { callRoutes } from './routes/calls.js';
import { corsOnEveryAnswer } from './routes/cors.js';
import { demoRoutes } from './routes/demo.js';
import { discoveryRoutes } from './routes/discovery.js';

const PACING_LOG_INTERVAL_MS = 5_000;

/** What a test, probe or benchmark may replace; everything else comes from the configuration. */
export interface GatewayOverrides {
  agent?: AgentBackend;
  stt?: SpeechToText;
  tts?: TextToSpeech;
  detectorFactory?: VoiceDetectorFactory;
  clock?: FrameClock;
  logger?: Logger;
  nowMs?: () => number;
  delay?: (ms: number) => Promise<void>;
  /**
   * How long a client function call may wait for its output (default 30 s, the contract's deadline). Tests and
   * the tool latency probe shorten it to see the real deadline fire without waiting half a minute.
   */
  toolTimeoutMs?: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The gateway's live calls (tests and probes read it). */
    voiceCalls: CallRegistry;
  }
}

/** Builds a ready gateway app from its configuration. */
export async function buildApp(config: VoiceConfig, overrides: GatewayOverrides = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  const logger = overrides.logger ?? createLogger({ debug: config.debug });
  const providers = await providersFromConfig(config, overrides);
  const registry = new CallRegistry(config.maxCalls);
  const metrics = new VoiceMetrics(registry);
  const clock = overrides.clock ?? new SharedFrameClock();
  // A test's own clock paces in-process; otherwise the configured sender does.
  const mediaSender =
    config.mediaSender === 'process' && !overrides.clock
      ? new MediaSender(logger, {
          lowerHelperThreads: config.lowerHelperThreads,
          realtimePriority: config.senderRealtimePriority,
        })
      : null;
  // Every 5 s with calls live: how evenly the shared clock sent frames (operators and bench:voice read it).
  const pacingLog =
    clock instanceof SharedFrameClock
      ? setInterval(() => {
          const local = clock.takePacingStats();
          metrics.recordPacing('inline', local);
          if (local) logger.info('pacing', { sender: 'inline', calls: registry.activeCount, ...local });
          const remote = mediaSender?.takePacing();
          if (mediaSender) metrics.recordPacing('process', remote?.stats ?? null);
          if (remote) logger.info('pacing', { sender: 'process', calls: remote.calls, ...remote.stats });
        }, PACING_LOG_INTERVAL_MS)
      : null;
  pacingLog?.unref();
  const services: CallServices = {
    ...providers,
    endpointSettings: config.audio.endpoint,
    trimLeadingSilence: config.audio.ttsTrimLeadingSilence,
    bargeIn: config.bargeIn,
    streamCaptions: config.streamCaptions,
    replyCompletionTimeoutMs: config.replyCompletionTimeoutMs,
    iceServers: config.iceServers,
    vadThreshold: config.audio.vadThreshold,
    clock,
    mediaSender,
    logger,
    randomHex: (bytes) => randomBytes(bytes).toString('hex'),
    delay: overrides.delay ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    ...(overrides.toolTimeoutMs === undefined ? {} : { toolTimeoutMs: overrides.toolTimeoutMs }),
  };
  app.decorate('voiceCalls', registry);
  corsOnEveryAnswer(app);
  metrics.observeRequests(app);
  metrics.routes(app, config);
  const speech = speechInUse(config, overrides);
  discoveryRoutes(app, config, speech);
  await callRoutes(app, { config, registry, services, nowMs: overrides.nowMs ?? (() => Date.now()) });
  demoRoutes(app);
  app.addHook('onClose', async () => {
    if (pacingLog) clearInterval(pacingLog);
    await registry.closeAll('gateway shutting down');
    await mediaSender?.close();
  });
  const [, warmed] = await Promise.all([
    warmUpWebrtc(),
    warmUpConfiguredTurnPath(config, overrides),
    mediaSender?.start(),
  ]);
  await app.ready();
  logger.info('gateway_ready', {
    providers_warmed: warmed,
    agent: providers.agent.label,
    stt: providers.stt.label,
    tts: providers.tts.label,
    // Which source each runs from and, for a fallback, why (a Hermes provider that cannot run here says so).
    speech,
    vad: providers.detectorFactory.backend,
    media_sender: mediaSender ? 'process' : 'inline',
    ...(mediaSender?.started ? { media_sender_scheduling: mediaSender.started.policy } : {}),
    max_calls: config.maxCalls,
    captions: config.streamCaptions ? 'streamed' : 'final_only',
    reply_completion_timeout_s: config.replyCompletionTimeoutMs / 1000,
    hermes_commands: config.agent.kind === 'hermes' ? (config.agent.commands ? 'dashboard' : 'refused') : 'refused',
  });
  return app;
}
