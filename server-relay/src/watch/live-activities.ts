import type { z } from 'zod';
import type { liveActivityProgress } from '@conduit/contracts/relay/live-activities';
import type { ApnsNotification } from '../apns/types.js';

/** iOS ends a Live Activity after 8 hours; a registration never outlives that. */
export const LIVE_ACTIVITY_TTL_MS = 8 * 3_600_000;
export const MAX_LIVE_ACTIVITIES_PER_INSTALLATION = 8;
export const MAX_LIVE_ACTIVITIES = 20_000;
/** An update not followed by another within this long shows as out of date on the Lock Screen. */
export const STALE_AFTER_S = 10 * 60;
/** An ended activity stays on the Lock Screen this long. */
export const DISMISS_AFTER_S = 15 * 60;

export interface LiveActivityRegistration {
  installationId: string;
  pushToken: string;
  sessionIds: readonly string[];
  gatewayId: string | undefined;
  expiresAt: number;
}

export type LiveActivityProgress = z.output<typeof liveActivityProgress>;

/**
 * Where Live Activity registrations live: this process' memory (one relay process) or Redis, shared
 * by the replicas (cluster/redis-live-activities.ts), so a token registered through one replica is
 * pushed by the replica a progress report reaches. Both keep the same rules (documented on
 * LiveActivityRegistry.register).
 */
export interface LiveActivityStore {
  register(
    installationId: string,
    pushToken: string,
    sessionIds: readonly string[],
    gatewayId: string | undefined,
  ): Promise<LiveActivityRegistration | 'capacity' | 'taken'>;
  /** Forgets a token of this installation (another installation's token is left alone). */
  remove(installationId: string, pushToken: string): Promise<void>;
  /** Forgets a registration (APNs called its token gone, or its turn ended), unless it was re-registered meanwhile. */
  forget(registration: LiveActivityRegistration): Promise<void>;
  /** Registrations watching this session of this gateway's installation. */
  watching(installationId: string, gatewayId: string, sessionId: string): Promise<LiveActivityRegistration[]>;
}

/** A LiveActivityRegistry as a LiveActivityStore (one process). */
export function memoryLiveActivities(registry: LiveActivityRegistry): LiveActivityStore {
  return {
    register: async (installationId, pushToken, sessionIds, gatewayId) =>
      registry.register(installationId, pushToken, sessionIds, gatewayId),
    remove: async (installationId, pushToken) => registry.remove(installationId, pushToken),
    forget: async (registration) => registry.forget(registration),
    watching: async (installationId, gatewayId, sessionId) => registry.watching(installationId, gatewayId, sessionId),
  };
}

/**
 * Live Activity push tokens by installation, in memory only: a relay restart stops updates and the
 * phone ends the out-of-date activity when the user opens Conduit.
 */
export class LiveActivityRegistry {
  /** By push token; a token belongs to one activity on one phone. */
  private readonly byToken = new Map<string, LiveActivityRegistration>();

  constructor(private readonly now: () => number) {}

  /**
   * Registers or re-registers a token. Re-registering keeps the first expiry (an activity cannot
   * outlive 8 hours); a ninth activity of an installation replaces its oldest.
   *
   * A token registered by another installation is refused ('taken'), never moved: iOS gives every
   * activity its own token on one phone, so a second installation naming it is not that phone but
   * someone who learned the token, and moving it would hand them the owner's Lock Screen (their
   * host's progress reports would update it) while the owner's stopped. The owner's registration
   * ends as any other: its phone deletes it, its turn ends, APNs calls the token gone, or 8 hours pass.
   */
  register(
    installationId: string,
    pushToken: string,
    sessionIds: readonly string[],
    gatewayId: string | undefined,
  ): LiveActivityRegistration | 'capacity' | 'taken' {
    this.sweep();
    const existing = this.byToken.get(pushToken);
    if (existing && existing.installationId === installationId) {
      const updated = { ...existing, sessionIds: [...new Set(sessionIds)], gatewayId };
      this.byToken.set(pushToken, updated);
      return updated;
    }
    if (existing) return 'taken';
    const own = [...this.byToken.values()].filter((r) => r.installationId === installationId);
    if (own.length >= MAX_LIVE_ACTIVITIES_PER_INSTALLATION) {
      const oldest = own.reduce((a, b) => (a.expiresAt <= b.expiresAt ? a : b));
      this.byToken.delete(oldest.pushToken);
    } else if (this.byToken.size >= MAX_LIVE_ACTIVITIES) {
      return 'capacity';
    }
    const registration: LiveActivityRegistration = {
      installationId,
      pushToken,
      sessionIds: [...new Set(sessionIds)],
      gatewayId,
      expiresAt: this.now() + LIVE_ACTIVITY_TTL_MS,
    };
    this.byToken.set(pushToken, registration);
    return registration;
  }

  /** Forgets a token of this installation (another installation's token is left alone). */
  remove(installationId: string, pushToken: string): void {
    if (this.byToken.get(pushToken)?.installationId === installationId) this.byToken.delete(pushToken);
  }

  /** Forgets a token APNs refused as gone, unless it was re-registered meanwhile. */
  forget(registration: LiveActivityRegistration): void {
    if (this.byToken.get(registration.pushToken) === registration) this.byToken.delete(registration.pushToken);
  }

  /** Registrations watching this session of this gateway's installation. */
  watching(installationId: string, gatewayId: string, sessionId: string): LiveActivityRegistration[] {
    const now = this.now();
    const out: LiveActivityRegistration[] = [];
    for (const registration of this.byToken.values()) {
      if (registration.expiresAt <= now) continue;
      if (registration.installationId !== installationId) continue;
      if (registration.gatewayId !== undefined && registration.gatewayId !== gatewayId) continue;
      if (registration.sessionIds.includes(sessionId)) out.push(registration);
    }
    return out;
  }

  get size(): number {
    return this.byToken.size;
  }

  sweep(): void {
    const now = this.now();
    for (const [token, registration] of this.byToken) if (registration.expiresAt <= now) this.byToken.delete(token);
  }
}

/**
 * The APNs `liveactivity` push for one progress report. Only the coarse fields cross: iOS renders
 * the content state itself, so nothing here is sealed. Attention phases and the end go at
 * priority 10; routine updates at 5, which APNs does not count against the activity's budget.
 */
export function liveActivityPush(apnsTopic: string, progress: LiveActivityProgress, nowMs: number): ApnsNotification {
  const nowS = Math.floor(nowMs / 1000);
  const contentState: Record<string, unknown> = {
    phase: progress.phase,
    tool_count: progress.tool_count,
    started_at: progress.started_at,
  };
  if (progress.tool_category !== undefined) contentState.tool_category = progress.tool_category;
  if (progress.context_pct !== undefined) contentState.context_pct = progress.context_pct;
  const end = progress.end === true;
  const aps: Record<string, unknown> = {
    timestamp: nowS,
    event: end ? 'end' : 'update',
    'content-state': contentState,
    'stale-date': nowS + STALE_AFTER_S,
  };
  if (end) aps['dismissal-date'] = nowS + DISMISS_AFTER_S;
  const urgent = end || progress.phase === 'approval' || progress.phase === 'input';
  return {
    payload: { aps },
    pushType: 'liveactivity',
    topic: `${apnsTopic}.push-type.liveactivity`,
    priority: urgent ? 10 : 5,
    expiration: nowS + STALE_AFTER_S,
  };
}

/** APNs answers meaning the token will never work again. */
export function tokenIsGone(result: { status: number; reason?: string }): boolean {
  return (
    result.status === 410 ||
    result.reason === 'BadDeviceToken' ||
    result.reason === 'Unregistered' ||
    result.reason === 'ExpiredToken'
  );
}
