import type { AnswerDelivery } from './watch-answer.js';
import { WATCH_LIMITS } from './watch-limits.js';

/** What a job has to tell the Watch: it finished, failed or was cancelled in Hermes, or it waits on an approval. */
export type JobNewsKind = 'finished' | 'failed' | 'cancelled' | 'approval';

/** The approval a job waits on, as the Watch shows it: it can only approve once or deny. */
export interface JobApprovalNews {
  approval_id: string;
  /** Redacted by Hermes. */
  command: string;
  description: string;
  choices: ['once', 'deny'];
}

/** One item of `job_news`, as the Watch reads it. */
export interface JobNewsItem {
  news_id: string;
  job_id: string;
  kind: JobNewsKind;
  title: string;
  /** A finished job's answer, clipped for the Watch (the chat holds all of it). */
  result?: string;
  error?: string;
  approval?: JobApprovalNews;
}

/**
 * One call's job news, kept until the Watch has heard it: each `job_news` answer carries the oldest
 * unheard items, and an item is retired only once the answer carrying it reached the relay for the
 * waiting Watch. News whose answer was lost (the relay gave up on the call, the post failed) is simply
 * still there for the next call, so nothing a job said is ever dropped on the way.
 */
export class JobNews {
  private items: JobNewsItem[] = [];
  private sequence = 0;

  add(item: Omit<JobNewsItem, 'news_id'>): string {
    this.sequence += 1;
    const newsId = `${item.job_id}.${this.sequence}`;
    this.items.push({ news_id: newsId, ...item });
    // A call that never asks still holds a bounded list: the oldest outcome goes first, never an
    // approval, which the job still waits on.
    while (this.items.length > WATCH_LIMITS.jobNewsKept) {
      const oldest = this.items.findIndex((kept) => kept.kind !== 'approval');
      if (oldest < 0) break;
      this.items.splice(oldest, 1);
    }
    return newsId;
  }

  /** Takes back an item no longer true (an approval answered or gone before the Watch heard of it). */
  withdraw(newsId: string): void {
    this.items = this.items.filter((item) => item.news_id !== newsId);
  }

  get unheard(): number {
    return this.items.length;
  }

  /**
   * The items one answer carries, oldest first; they are retired when `delivery` says the answer
   * reached the relay, and otherwise go again with the next call.
   */
  forAnswer(delivery: AnswerDelivery | undefined): JobNewsItem[] {
    const carried = this.items.slice(0, WATCH_LIMITS.jobNewsPerAnswer);
    const ids = new Set(carried.map((item) => item.news_id));
    delivery?.onSettled((delivered) => {
      if (delivered) this.items = this.items.filter((item) => !ids.has(item.news_id));
    });
    return carried.map((item) => ({ ...item }));
  }
}
