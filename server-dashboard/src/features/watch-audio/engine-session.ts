import { z } from 'zod';
import { WATCH_AUDIO_ENGINES, type WatchAudioEngine } from '@conduit/contracts/dashboard/watch-audio';
import type { ProfileScope } from '../../notifier/notifier.js';
import { WATCH_AUDIO_LIMITS } from './watch-audio-limits.js';

/** The control `error` codes the Watch reads (CRYPTO.md §4). */
export type ControlErrorCode =
  'bad_request' | 'busy' | 'rate_limited' | 'unavailable' | 'refused' | 'unreachable' | 'failed' | 'version';

/** A start the engine could not make, told to the Watch as a control error. */
export class EngineRefusal extends Error {
  constructor(
    readonly code: ControlErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The Watch's `start`, checked. */
export interface StartRequest {
  engine: WatchAudioEngine;
  voice: string | undefined;
  briefing: string | undefined;
  greeting: string | undefined;
  history: Record<string, unknown>[];
}

const startMessage = z.object({
  type: z.literal('start'),
  engine: z.enum(WATCH_AUDIO_ENGINES),
  voice: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/)
    .nullish(),
  briefing: z.string().max(WATCH_AUDIO_LIMITS.briefingMaxChars).nullish(),
  greeting: z.string().max(WATCH_AUDIO_LIMITS.greetingMaxChars).nullish(),
  history: z.array(z.record(z.string(), z.unknown())).nullish(),
});

/** A control message from the Watch: `start`, `end`, or one this host refuses with `bad_request`. */
export type ControlMessage = { type: 'start'; start: StartRequest } | { type: 'end' } | { type: 'invalid' };

export function readControl(payload: unknown): ControlMessage {
  if (typeof payload === 'object' && payload !== null && (payload as { type?: unknown }).type === 'end') {
    return { type: 'end' };
  }
  const parsed = startMessage.safeParse(payload);
  if (!parsed.success) return { type: 'invalid' };
  const start = parsed.data;
  return {
    type: 'start',
    start: {
      engine: start.engine,
      voice: start.voice?.toLowerCase() ?? undefined,
      briefing: start.briefing?.trim() || undefined,
      greeting: start.greeting ?? undefined,
      history: (start.history ?? []).slice(-WATCH_AUDIO_LIMITS.historyItems),
    },
  };
}

/** What the `started` control tells the Watch about the session. */
export interface StartedSession {
  model: string | undefined;
  voice: string;
  inputRateHz: number;
  outputRateHz: number;
  briefingApplied: boolean;
  greetingApplied: boolean;
}

/** Where an engine's output goes: toward the Watch, sealed by the caller. */
export interface EngineSink {
  /** PCM16LE mono at the session's output rate. */
  audio(pcm: Buffer): void;
  /** One of the engine's own events, as JSON text. */
  event(text: string): void;
  /** The provider ended the session (once). */
  ended(reason: string): void;
}

/** One provider session a Watch call holds on this host. */
export interface EngineSession {
  readonly started: StartedSession;
  /** PCM16LE mono at the session's input rate, from the Watch. */
  audio(pcm: Buffer): void;
  /** One of the engine's own events from the Watch, as JSON text. */
  event(text: string): void;
  close(): Promise<void>;
}

/** Starts one engine's session for a profile; throws EngineRefusal when it cannot. */
export type EngineStarter = (profile: ProfileScope, request: StartRequest, sink: EngineSink) => Promise<EngineSession>;
