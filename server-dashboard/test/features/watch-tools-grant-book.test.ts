/**
 * The grant book's own rules, where the real relay cannot be made to misbehave on cue: a call handed
 * over twice runs once, an answer too large for the relay becomes a sealed refusal (at the exact
 * character), failed polls back off on the host's timers, a grant the relay says is gone is not told
 * again, and closing everything waits for the relay to be told. The relay here is a scripted port that
 * reports each request; sealing is checked with the vector's keys.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { HostActivity } from '../../src/kernel/activity.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { silentLogger } from '../../src/log.js';
import type { AnswerDelivery, WatchAnswer } from '../../src/features/watch/watch-answer.js';
import { WatchLiveTokens } from '../../src/features/watch/watch-live-token.js';
import { WatchGrantBook, type WatchGrant, type WatchGrantRelay } from '../../src/features/watch/watch-grants.js';
import type { PollAnswer } from '../../src/features/watch/watch-relay.js';
import {
  deriveWatchKeys,
  openWatchMessage,
  sealWatchMessage,
  watchPlaintext,
  type SealedWatchMessage,
} from '../../src/features/watch/watch-seal.js';

const GRANT_ID = 'G'.repeat(22);
const keys = deriveWatchKeys(new Uint8Array(32).map((_, i) => i));
let nonceCounter = 0;
const nextNonce = () => {
  const nonce = new Uint8Array(12);
  new DataView(nonce.buffer).setUint32(8, (nonceCounter += 1));
  return nonce;
};

/** The relay's host side, scripted: each poll waits for the test's answer; results and closes are reported. */
class ScriptedRelay implements WatchGrantRelay {
  readonly results: { rid: string; sealed: SealedWatchMessage }[] = [];
  readonly closes: string[] = [];
  private readonly polls: ((answer: PollAnswer) => void)[] = [];
  private readonly pollWaiters: (() => void)[] = [];
  private readonly resultWaiters: (() => void)[] = [];
  private releaseClose: (() => void) | null = null;
  holdCloses = false;
  /** What postResult answers next: whether the relay took the answer for the waiting Watch. */
  delivers: boolean[] = [];

  poll(_target: unknown, _gid: string, signal: AbortSignal): Promise<PollAnswer> {
    return new Promise((resolve) => {
      this.polls.push(resolve);
      signal.addEventListener('abort', () => resolve({ kind: 'failed', status: null }), { once: true });
      this.pollWaiters.splice(0).forEach((wake) => wake());
    });
  }

  postResult(_target: unknown, _gid: string, rid: string, sealed: SealedWatchMessage): Promise<boolean> {
    this.results.push({ rid, sealed });
    this.resultWaiters.splice(0).forEach((wake) => wake());
    return Promise.resolve(this.delivers.shift() ?? true);
  }

  closeGrant(_target: unknown, gid: string): Promise<void> {
    this.closes.push(gid);
    if (!this.holdCloses) return Promise.resolve();
    return new Promise((resolve) => (this.releaseClose = resolve));
  }

  finishClose(): void {
    this.releaseClose?.();
  }

  get pollsMade(): number {
    return this.polls.length;
  }

  /** Resolves once `count` polls have been made in all. */
  async untilPolls(count: number): Promise<void> {
    while (this.polls.length < count) await new Promise<void>((wake) => this.pollWaiters.push(wake));
  }

  async untilResults(count: number): Promise<void> {
    while (this.results.length < count) await new Promise<void>((wake) => this.resultWaiters.push(wake));
  }

  /** Answers the newest poll. */
  answer(answer: PollAnswer): void {
    this.polls.at(-1)?.(answer);
  }
}

function setUp(runTool: (tool: string, delivery: AnswerDelivery) => Promise<WatchAnswer>) {
  const relay = new ScriptedRelay();
  const clock = new ManualClock();
  const timers = new ManualTimers();
  const released: string[] = [];
  const releaseWaiters: (() => void)[] = [];
  /** Resolves once a grant was released (the book's report that it closed). */
  const untilReleased = () =>
    new Promise<void>((resolve) => (released.length > 0 ? resolve() : releaseWaiters.push(resolve)));
  const book = new WatchGrantBook({
    relay,
    clock,
    timers,
    log: silentLogger,
    activity: new HostActivity(),
    random: nextNonce,
    runTool: (_grant, tool, _args, delivery) => runTool(tool, delivery),
    released: (grant) => {
      released.push(grant.id);
      releaseWaiters.splice(0).forEach((wake) => wake());
    },
  });
  const grant: WatchGrant = {
    id: GRANT_ID,
    profile: { name: 'default', home: '/nowhere' },
    limiterKey: '',
    target: { relayUrl: 'https://relay.invalid', credential: 'c' },
    keys,
    tools: new Set(['web_search', 'live_token']),
    openedAtMs: clock.now(),
    expiresAtMs: clock.now() + 1_800_000,
    settings: { maxJobs: 0, jobOptions: undefined, jobProfiles: undefined },
  };
  return { relay, clock, timers, book, grant, released, untilReleased };
}

function callFrom(rid: string, tool = 'web_search') {
  const sealed = sealWatchMessage(
    keys.call,
    'call',
    GRANT_ID,
    rid,
    watchPlaintext({ tool, args: { query: 'q' } }),
    nextNonce(),
  );
  return { rid, ...sealed };
}

function opened(sealed: SealedWatchMessage, rid: string) {
  const result = openWatchMessage(keys.result, 'result', GRANT_ID, rid, sealed, 1 << 20);
  return result.ok ? result.payload : result;
}

describe('the grant book', () => {
  it('runs a call the relay hands over twice only once', async () => {
    let runs = 0;
    const { relay, book, grant } = setUp(() => {
      runs += 1;
      return Promise.resolve({ ok: true, n: runs });
    });
    book.add(grant);
    await relay.untilPolls(1);
    const call = callFrom('R'.repeat(22));
    relay.answer({ kind: 'calls', calls: [call, call] });
    await relay.untilPolls(2);
    relay.answer({ kind: 'calls', calls: [call] });
    await relay.untilResults(1);
    await relay.untilPolls(3);
    expect(runs).toBe(1);
    expect(relay.results.map((result) => opened(result.sealed, result.rid))).toEqual([{ ok: true, n: 1 }]);
    await book.closeAll();
  });

  it('seals an answer of exactly 24,000 characters, and refuses one a character over, sealed', async () => {
    // 17,984 plaintext bytes + the 16-byte tag = 18,000 bytes = 24,000 base64url characters.
    const sized = (bytes: number): WatchAnswer => {
      const base = watchPlaintext({ ok: true, text: '' }).length;
      return { ok: true, text: 'x'.repeat(bytes - base) };
    };
    const answers = [sized(17_984), sized(17_985)];
    const { relay, book, grant } = setUp(() => Promise.resolve(answers.shift() ?? { ok: true }));
    book.add(grant);
    await relay.untilPolls(1);
    relay.answer({ kind: 'calls', calls: [callFrom('A'.repeat(22)), callFrom('B'.repeat(22))] });
    await relay.untilResults(2);
    const byRid = new Map(relay.results.map((result) => [result.rid, result.sealed]));
    const atCap = byRid.get('A'.repeat(22));
    expect(atCap?.ct.length).toBe(24_000);
    expect(atCap && opened(atCap, 'A'.repeat(22))).toMatchObject({ ok: true });
    const over = byRid.get('B'.repeat(22));
    expect(over && opened(over, 'B'.repeat(22))).toEqual({
      ok: false,
      status: 502,
      detail: 'The answer is too large for the Watch',
    });
    await book.closeAll();
  });

  it('polls again 1 s after a failed poll, then 2 s, and at once after a good one', async () => {
    const { relay, timers, book, grant } = setUp(() => Promise.resolve({ ok: true }));
    book.add(grant);
    await relay.untilPolls(1);
    relay.answer({ kind: 'failed', status: 503 });
    await timers.untilWaiting(2); // the grant's expiry and the backoff
    timers.advance(999);
    expect(relay.pollsMade).toBe(1);
    timers.advance(1);
    await relay.untilPolls(2);
    relay.answer({ kind: 'failed', status: null });
    await timers.untilWaiting(2);
    timers.advance(1999);
    expect(relay.pollsMade).toBe(2);
    timers.advance(1);
    await relay.untilPolls(3);
    relay.answer({ kind: 'calls', calls: [] });
    await relay.untilPolls(4);
    await book.closeAll();
  });

  it('forgets a grant the relay says is gone without telling the relay, and closes its expiry timer', async () => {
    const { relay, timers, book, grant, untilReleased } = setUp(() => Promise.resolve({ ok: true }));
    book.add(grant);
    await relay.untilPolls(1);
    relay.answer({ kind: 'gone', status: 410 });
    await untilReleased();
    expect(book.size).toBe(0);
    expect(relay.closes).toEqual([]);
    expect(timers.waiting).toBe(0);
  });

  it('closes a grant at its expiry on the host timers, and closeAll waits until the relay was told', async () => {
    const { relay, timers, book, grant, released } = setUp(() => Promise.resolve({ ok: true }));
    book.add(grant);
    await relay.untilPolls(1);
    timers.advance(1_800_000);
    expect(released).toEqual([GRANT_ID]);
    expect(relay.closes).toEqual([GRANT_ID]);

    const second = setUp(() => Promise.resolve({ ok: true }));
    second.relay.holdCloses = true;
    second.book.add(second.grant);
    let done = false;
    const closing = second.book.closeAll().then(() => (done = true));
    expect(second.relay.closes).toEqual([GRANT_ID]);
    await Promise.resolve();
    expect(done).toBe(false);
    second.relay.finishClose();
    await closing;
    expect(done).toBe(true);
  });

  it('tells a tool whether its answer reached the relay: taken, refused, or swapped for the too-large refusal', async () => {
    const heard: boolean[] = [];
    const answers: WatchAnswer[] = [{ ok: true }, { ok: true }, { ok: true, text: 'x'.repeat(20_000) }];
    const { relay, book, grant } = setUp((_tool, delivery) => {
      delivery.onSettled((delivered) => heard.push(delivered));
      return Promise.resolve(answers.shift() ?? { ok: true });
    });
    relay.delivers = [true, false, true];
    book.add(grant);
    await relay.untilPolls(1);
    relay.answer({ kind: 'calls', calls: [callFrom('A'.repeat(22))] });
    await relay.untilResults(1);
    await relay.untilPolls(2);
    relay.answer({ kind: 'calls', calls: [callFrom('B'.repeat(22))] });
    await relay.untilResults(2);
    await relay.untilPolls(3);
    relay.answer({ kind: 'calls', calls: [callFrom('C'.repeat(22))] });
    await relay.untilResults(3);
    await book.closeAll();
    expect(heard).toEqual([true, false, false]);
  });

  it('counts a live token only once its answer reached the relay: six a grant, a lost one not among them', async () => {
    let minted = 0;
    const liveTokens = new WatchLiveTokens({
      settings: () => Promise.resolve({ apiKey: 'k', model: 'm', apiVersion: 'v1alpha' }),
      mint: () => {
        minted += 1;
        return Promise.resolve({
          ok: true,
          token: `auth_tokens/${minted}`,
          expires_at: 'e',
          new_session_expires_at: 'n',
          model: 'm',
          websocket_url: 'wss://x',
        });
      },
    });
    const setup = setUp((_tool, delivery) => liveTokens.run(setup.grant, delivery));
    const { relay, book, grant } = setup;
    relay.delivers = [false];
    book.add(grant);
    for (let i = 0; i < 8; i += 1) {
      await relay.untilPolls(i + 1);
      relay.answer({ kind: 'calls', calls: [callFrom(String.fromCharCode(65 + i).repeat(22), 'live_token')] });
      await relay.untilResults(i + 1);
    }
    const answers = relay.results.map((result) => opened(result.sealed, result.rid));
    // The first answer never reached the Watch, so seven were minted before the cap of six delivered.
    expect(minted).toBe(7);
    expect(answers.slice(0, 7)).toEqual(
      Array.from(
        { length: 7 },
        (_, i) => expect.objectContaining({ ok: true, token: `auth_tokens/${i + 1}` }) as unknown,
      ),
    );
    expect(answers[7]).toEqual({
      ok: false,
      status: 429,
      detail: 'This Watch call has minted all the Gemini Live tokens it may',
    });
    await book.closeAll();
  });
});
