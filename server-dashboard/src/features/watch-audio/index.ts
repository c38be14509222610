import type { z } from 'zod';
import {
  getWatchAudioStatus,
  postWatchAudioPrepare,
  WATCH_AUDIO_VERSION,
  type watchAudioEngineStatus,
  type WatchAudioEngine,
} from '@conduit/contracts/dashboard/watch-audio';
import { bindRoute } from '@conduit/contracts/server';
import { answerWithDetail, DetailError } from '../../kernel/detail-errors.js';
import type { FeatureKernel, HostFeature } from '../../kernel/feature.js';
import { SlidingWindowLimit } from '../../kernel/rate-window.js';
import {
  provideWatchAudio,
  type WatchAudioGrant,
  type WatchAudioGrantAnswer,
  type WatchAudioPort,
} from '../../kernel/watch-audio-port.js';
import type { EngineStarter } from './engine-session.js';
import { gptLiveEngine, loadGptLiveRuntime } from './gpt-live-engine.js';
import { grokEngine } from './grok-engine.js';
import { bridgeUrl, WatchAudioLine } from './watch-audio-line.js';
import { WATCH_AUDIO_LIMITS } from './watch-audio-limits.js';

export { WATCH_AUDIO_LIMITS } from './watch-audio-limits.js';

type EngineStatus = z.infer<typeof watchAudioEngineStatus>;

/** Grok runs on Hermes' own xAI sign-in through this host's socket: always there (the status route). */
const GROK_STATUS: EngineStatus = { runtime: 'ready', source: 'hermes', reason: null };

export interface WatchAudioOptions {
  /** The engines' starters; tests and the benchmark may replace one. */
  engines?: Partial<Record<WatchAudioEngine, EngineStarter>>;
  /** Watch calls this host carries at once (4, the seed's bound). */
  callsPerHost?: number;
  userAgent?: string;
}

/**
 * The Watch calls this host carries (the seed, Watch audio): one line per audio grant to the relay's
 * bridge, the engines they reach, and the host-wide call bound. Watch tools opens a line when it grants
 * `audio: true` and closes it with the grant.
 */
export class WatchAudio implements WatchAudioPort {
  private readonly lines = new Map<string, WatchAudioLine>();
  private readonly engines: Record<WatchAudioEngine, EngineStarter>;
  private callsHeld = 0;

  constructor(
    private readonly kernel: FeatureKernel,
    private readonly options: WatchAudioOptions = {},
  ) {
    this.engines = {
      gpt_live: options.engines?.gpt_live ?? gptLiveEngine(kernel),
      grok: options.engines?.grok ?? grokEngine(kernel),
    };
  }

  /** GPT-Live's runtime: werift and Opus loaded in this process, or why they could not be. */
  async gptLiveStatus(): Promise<EngineStatus> {
    try {
      await loadGptLiveRuntime();
      return { runtime: 'ready', source: 'plugin', reason: null };
    } catch (error) {
      return {
        runtime: 'failed',
        source: 'plugin',
        reason: `The WebRTC runtime didn't load on this host (${error instanceof Error ? error.name : 'Error'})`,
      };
    }
  }

  async status(): Promise<{ gpt_live: EngineStatus; grok: EngineStatus }> {
    return { gpt_live: await this.gptLiveStatus(), grok: GROK_STATUS };
  }

  /** The engines a new grant offers: GPT-Live once its runtime is ready (the seed), Grok always. */
  async offeredEngines(): Promise<WatchAudioEngine[]> {
    return (await this.gptLiveStatus()).runtime === 'ready' ? ['gpt_live', 'grok'] : ['grok'];
  }

  /** Watch calls being carried now. */
  get calls(): number {
    return this.callsHeld;
  }

  /**
   * Dials the relay's bridge for a grant and waits until the relay took the socket, so the Watch that
   * dials next finds the host there. False when the relay didn't take it in time (the line is closed).
   */
  async open(grant: WatchAudioGrant, engines: WatchAudioEngine[]): Promise<WatchAudioGrantAnswer | null> {
    const line = new WatchAudioLine(
      { ...grant, engines },
      {
        timers: this.kernel.timers,
        log: this.kernel.log,
        userAgent: this.options.userAgent ?? 'Conduit-Host',
        engines: this.engines,
        takeCallSlot: () => this.takeCallSlot(),
      },
    );
    void this.lines.get(grant.id)?.close();
    this.lines.set(grant.id, line);
    line.start();
    const connected = await new Promise<boolean>((resolve) => {
      const cancel = this.kernel.timers.after(WATCH_AUDIO_LIMITS.relayConnectTimeoutMs, () => resolve(false));
      void line.whenConnected().then(() => {
        cancel();
        resolve(true);
      });
    });
    if (!connected) {
      await this.close(grant.id);
      return null;
    }
    return { url: bridgeUrl(grant.relayUrl, grant.id, 'watch'), version: WATCH_AUDIO_VERSION, engines };
  }

  /** The grant closed: its call ends and its line hangs up. */
  async close(grantId: string): Promise<void> {
    const line = this.lines.get(grantId);
    if (!line) return;
    this.lines.delete(grantId);
    await line.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.lines.keys()].map((id) => this.close(id)));
  }

  private takeCallSlot(): (() => void) | null {
    if (this.callsHeld >= (this.options.callsPerHost ?? WATCH_AUDIO_LIMITS.callsPerHost)) return null;
    this.callsHeld += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.callsHeld -= 1;
    };
  }
}

/**
 * Watch audio (`watch-audio`): the runtime status and prepare routes (ROUTES.md). The reference prepares
 * a Python venv with aiortc for its GPT-Live helper; this host runs WebRTC (werift) and Opus in its own
 * process, so prepare loads them and answers their status, and nothing is installed.
 */
export function createWatchAudioFeature(options?: WatchAudioOptions): HostFeature {
  return {
    name: 'watch-audio',
    capabilities: [{ name: 'watch-audio', method: 'GET', path: getWatchAudioStatus.path }],
    register(scope, kernel) {
      // The app's one Watch audio service; Watch tools reach it through the kernel (watch-audio-port.ts).
      const audio = new WatchAudio(kernel, options);
      provideWatchAudio(kernel, audio);
      const prepares = new SlidingWindowLimit(
        WATCH_AUDIO_LIMITS.preparesPerWindow,
        WATCH_AUDIO_LIMITS.preparesWindowMs,
        () => kernel.clock.now(),
      );
      scope.addHook('onClose', () => audio.closeAll());
      answerWithDetail(scope, {
        bodyLimitBytes: 1024,
        failure: (request, type) =>
          `Watch audio ${request.url.includes('/prepare') ? 'prepare' : 'status'} failed on the host (${type})`,
      });

      bindRoute(scope, getWatchAudioStatus, async () => ({
        status: 200,
        body: { ok: true as const, version: WATCH_AUDIO_VERSION, engines: await audio.status() },
        headers: { 'Cache-Control': 'no-store' },
      }));

      bindRoute(scope, postWatchAudioPrepare, async () => {
        if (!prepares.tryTake('')) {
          throw new DetailError(
            429,
            'Preparing GPT-Live for the Watch was asked too often; try again in a few minutes',
          );
        }
        return {
          status: 200,
          body: { ok: true as const, version: WATCH_AUDIO_VERSION, engines: { gpt_live: await audio.gptLiveStatus() } },
          headers: { 'Cache-Control': 'no-store' },
        };
      });
    },
  };
}

/** Watch audio with this host's defaults. */
export const watchAudioFeature: HostFeature = createWatchAudioFeature();
