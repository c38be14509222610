import type { GeminiLiveTokens } from '../../kernel/gemini-live/index.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { answerOfFailure, refusal, type AnswerDelivery, type WatchAnswer } from './watch-answer.js';
import { WATCH_LIMITS } from './watch-limits.js';

/** The grant as live tokens see it. */
export interface LiveTokenGrant {
  readonly id: string;
  readonly profile: ProfileScope;
  readonly limiterKey: string;
}

/**
 * `live_token` (the seed, Apple Watch calls: Gemini Live tokens): a fresh single-use Gemini Live token
 * for a Watch call whose Gemini session broke while the iPhone is out of reach, minted by the same
 * kernel code as `POST /gemini-live/token` (same key, model, window) and answered with its fields,
 * sealed, so the relay never sees it and the key never leaves this host.
 */
export class WatchLiveTokens {
  /** Per open grant: tokens that reached the Watch, and mints still in flight (held against the cap). */
  private readonly counts = new Map<string, { delivered: number; pending: number }>();

  constructor(private readonly tokens: Pick<GeminiLiveTokens, 'settings' | 'mint'>) {}

  /** Whether a grant may carry live_token: only where this profile has a Gemini key. */
  async available(profile: ProfileScope): Promise<boolean> {
    return (await this.tokens.settings(profile)).apiKey !== undefined;
  }

  async run(grant: LiveTokenGrant, delivery: AnswerDelivery): Promise<WatchAnswer> {
    const count = this.counts.get(grant.id) ?? { delivered: 0, pending: 0 };
    this.counts.set(grant.id, count);
    // In-flight mints hold a place, so two calls at once cannot both take the last one.
    if (count.delivered + count.pending >= WATCH_LIMITS.liveTokensPerGrant) {
      return refusal(429, 'This Watch call has minted all the Gemini Live tokens it may');
    }
    count.pending += 1;
    let answer: WatchAnswer;
    try {
      answer = await this.tokens.mint(grant.profile, grant.limiterKey);
    } catch (error) {
      count.pending -= 1;
      return answerOfFailure('live_token', error);
    }
    // Counted once the relay took the answer: a token the Watch never received is no token used.
    delivery.onSettled((delivered) => {
      count.pending -= 1;
      if (delivered) count.delivered += 1;
    });
    return answer;
  }

  /** The grant closed: its count goes with it (a renewal is a new grant and counts its own). */
  released(grant: LiveTokenGrant): void {
    this.counts.delete(grant.id);
  }
}
