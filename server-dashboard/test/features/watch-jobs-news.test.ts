/**
 * A call's job news on its own: an answer carries the oldest six items, only an answer that reached
 * the relay retires what it carried, withdrawn items are not told, and a call that never asks keeps a
 * bounded list that drops the oldest outcomes but never an approval a job still waits on.
 */
import { describe, expect, it } from 'vitest';
import type { AnswerDelivery } from '../../src/features/watch/watch-answer.js';
import { JobNews } from '../../src/features/watch/watch-job-news.js';
import { WATCH_LIMITS } from '../../src/features/watch/watch-limits.js';

/** A delivery the test settles, as the grant book does once the relay answered the post. */
function delivery(): AnswerDelivery & { settle(delivered: boolean): void } {
  const listeners: ((delivered: boolean) => void)[] = [];
  return {
    onSettled: (listener) => listeners.push(listener),
    settle: (delivered) => listeners.splice(0).forEach((listener) => listener(delivered)),
  };
}

const finished = (jobId: string) => ({ job_id: jobId, kind: 'finished' as const, title: jobId, result: 'ok' });

describe('job news', () => {
  it('carries six items an answer, retires them only once delivered, oldest first', () => {
    const news = new JobNews();
    for (let index = 1; index <= 8; index += 1) news.add(finished(`job-${index}`));
    const lost = delivery();
    const first = news.forAnswer(lost);
    expect(first.map((item) => item.job_id)).toEqual(['job-1', 'job-2', 'job-3', 'job-4', 'job-5', 'job-6']);
    lost.settle(false);
    expect(news.unheard).toBe(8);

    const heard = delivery();
    expect(news.forAnswer(heard).map((item) => item.news_id)).toEqual(first.map((item) => item.news_id));
    heard.settle(true);
    expect(news.forAnswer(undefined).map((item) => item.job_id)).toEqual(['job-7', 'job-8']);
    expect(WATCH_LIMITS.jobNewsPerAnswer).toBe(6);
  });

  it('does not tell a withdrawn item, and keeps approvals when the list is full', () => {
    const news = new JobNews();
    const approval = news.add({
      job_id: 'waiting',
      kind: 'approval',
      title: 'waiting',
      approval: { approval_id: 'a', command: 'ls', description: 'list', choices: ['once', 'deny'] },
    });
    const gone = news.add(finished('gone'));
    news.withdraw(gone);
    for (let index = 0; index < WATCH_LIMITS.jobNewsKept + 5; index += 1) news.add(finished(`job-${index}`));
    expect(news.unheard).toBe(WATCH_LIMITS.jobNewsKept);
    const told = news.forAnswer(undefined);
    expect(told[0]).toMatchObject({ news_id: approval, kind: 'approval' });
    // The oldest outcomes went first.
    expect(told[1]).toMatchObject({ job_id: 'job-6' });
  });
});
