import type { Clock } from '../clock.js';
import { hookString, type HookPayload } from '../bridge/hook-payload.js';
import type { ProfileScope } from '../notifier/notifier.js';

interface Pending {
  runId: string | undefined;
  requestId: string | undefined;
  raisedAt: number;
}

export type ApprovalLookup =
  | { state: 'pending'; runId: string | undefined; requestId: string | undefined }
  | { state: 'settled' }
  | { state: 'unknown' };

/** An approval waits at most this long for an answer (Hermes' own approval timeout is shorter). */
const PENDING_TTL_MS = 60 * 60_000;
/** How long an answered approval is remembered, so a late phone answer hears "already answered". */
const SETTLED_TTL_MS = 30 * 60_000;
const MAX_ENTRIES = 1_000;

/**
 * The approvals Hermes is waiting on, per profile and session key, as its hooks reported them:
 * pre_approval_request opens one (with the API server run id when Hermes names it), and
 * post_approval_response — an answer given natively, in the TUI, Desktop or a chat platform —
 * settles it, which retires the phone's card.
 */
export class ApprovalBook {
  private readonly pending = new Map<string, Pending>();
  private readonly settled = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  private key(profile: ProfileScope, sessionKey: string): string {
    return `${profile.home}\u0000${sessionKey}`;
  }

  private sweep(now: number): void {
    for (const [key, entry] of this.pending) if (now - entry.raisedAt > PENDING_TTL_MS) this.pending.delete(key);
    for (const [key, at] of this.settled) if (now - at > SETTLED_TTL_MS) this.settled.delete(key);
    while (this.pending.size > MAX_ENTRIES) this.pending.delete(this.pending.keys().next().value as string);
    while (this.settled.size > MAX_ENTRIES) this.settled.delete(this.settled.keys().next().value as string);
  }

  raised(profile: ProfileScope, payload: HookPayload): void {
    const sessionKey = hookString(payload, 'session_key');
    if (!sessionKey) return;
    const now = this.clock.now();
    this.sweep(now);
    const key = this.key(profile, sessionKey);
    this.settled.delete(key);
    this.pending.set(key, {
      runId: hookString(payload, 'run_id'),
      requestId: hookString(payload, 'approval_request_id') ?? hookString(payload, 'request_id'),
      raisedAt: now,
    });
  }

  answered(profile: ProfileScope, sessionKey: string): void {
    const key = this.key(profile, sessionKey);
    if (this.pending.delete(key)) this.settled.set(key, this.clock.now());
  }

  lookup(profile: ProfileScope, sessionKey: string): ApprovalLookup {
    this.sweep(this.clock.now());
    const key = this.key(profile, sessionKey);
    const entry = this.pending.get(key);
    if (entry) return { state: 'pending', runId: entry.runId, requestId: entry.requestId };
    return this.settled.has(key) ? { state: 'settled' } : { state: 'unknown' };
  }
}
