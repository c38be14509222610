import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clarifyResult, parseMultiSelect, pollDelayMs, stripRecommended } from '../../src/cards/clarify-answers.js';
import { normaliseClarify } from '../../src/notifier/events.js';
import { tempHermesHome, testConfig } from '../support/config.js';
import { FakeRelay } from '../support/fake-relay.js';
import { callHook } from '../support/hook-call.js';
import { startHost } from '../support/host.js';
import { writePairing } from '../support/pairing.js';

let home: ReturnType<typeof tempHermesHome>;
let relay: FakeRelay;

beforeEach(async () => {
  home = tempHermesHome();
  relay = new FakeRelay();
  await relay.start();
  writePairing(home.root, relay.url);
});
afterEach(async () => {
  await relay.stop();
  home.cleanup();
});

const clarifyCall = (args: unknown, session = 's1', profile = 'default') => ({
  hook_event_name: 'pre_tool_call',
  tool_name: 'clarify',
  tool_input: args,
  session_id: session,
  profile,
  extra: { tool_call_id: 'call-9', turn_id: 'turn-9' },
});

/** The release is fired off the answer's path, so it lands a moment after the hook returns. */
async function eventuallyReleased(): Promise<string[]> {
  for (let i = 0; i < 200 && relay.released.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return relay.released;
}

async function waitForDecision(): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const id = [...relay.decisions.keys()][0];
    if (id) return id;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('no decision parked');
}

describe('answerable clarify cards', () => {
  it('a scalar question answered on the phone comes back in the scalar result shape', async () => {
    const host = await startHost(testConfig(home.root));
    const pending = callHook(
      host.url,
      host.hookToken,
      clarifyCall({ question: 'Deploy now?', choices: ['yes', 'no'] }),
    );
    relay.answer(await waitForDecision(), 'yes');
    const { answer } = await pending;
    await host.app.close();
    expect(answer).toEqual({
      action: 'block',
      message: JSON.stringify({ question: 'Deploy now?', choices_offered: ['yes', 'no'], user_response: 'yes' }),
    });
    expect(relay.events[0]?.body.decision).toMatchObject({
      kind: 'clarify',
      question: 'Deploy now?',
      choices: ['yes', 'no'],
    });
    expect(relay.events[0]?.body.decision).not.toHaveProperty('questions');
  });

  it('an undeliverable card (cards off, too large, APNs refusal) falls back to the native path at once and is released', async () => {
    relay.deliverable = false;
    const host = await startHost(testConfig(home.root));
    const { status, answer } = await callHook(host.url, host.hookToken, clarifyCall({ questions: ['One?'] }));
    expect([status, answer]).toEqual([204, null]);
    expect(await eventuallyReleased()).toHaveLength(1);
    await host.app.close();
  });

  it('a relay that refuses the event (decision capacity, APNs) lets Hermes ask natively', async () => {
    relay.scripted.push({ status: 502, body: { error: 'apns_unreachable' } });
    const host = await startHost(testConfig(home.root));
    const { answer } = await callHook(host.url, host.hookToken, clarifyCall({ question: 'Q?' }));
    await host.app.close();
    expect(answer).toBeNull();
  });

  it('a 429 decision_capacity_exceeded falls back at once and the card never sits in the retry queue', async () => {
    relay.maxActiveDecisions = 0;
    // Retries an hour apart: a hook that waited for the retry would time out this test.
    const host = await startHost(testConfig(home.root, { limits: { retryBaseMs: 3_600_000, retryMaxMs: 3_600_000 } }));
    const { status, answer } = await callHook(host.url, host.hookToken, clarifyCall({ question: 'Ship it?' }));
    expect([status, answer]).toEqual([204, null]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(relay.events).toHaveLength(1);
    expect(relay.decisions.size).toBe(0);
    expect(relay.polled).toEqual([]);
    expect(host.queue.size).toBe(0);
    await host.app.close();
  });

  it('an unpaired profile, a subagent, or a call with no question is left to Hermes', async () => {
    const host = await startHost(testConfig(home.root));
    const unpaired = await callHook(host.url, host.hookToken, clarifyCall({ question: 'Q?' }, 's1', 'work'));
    await callHook(host.url, host.hookToken, {
      hook_event_name: 'subagent_start',
      session_id: 'p',
      profile: 'default',
      extra: { child_session_id: 'kid' },
    });
    const child = await callHook(host.url, host.hookToken, clarifyCall({ question: 'Q?' }, 'kid'));
    const empty = await callHook(host.url, host.hookToken, clarifyCall({ questions: [] }));
    await host.app.close();
    expect([unpaired.answer, child.answer, empty.answer]).toEqual([null, null, null]);
    expect(relay.events).toHaveLength(0);
  });

  it('the budget running out releases the parked decision and falls back', async () => {
    const host = await startHost(testConfig(home.root, { limits: { clarifyBudgetS: 1, clarifyPollMs: 100 } }));
    const { answer } = await callHook(host.url, host.hookToken, clarifyCall({ question: 'Q?' }));
    expect(answer).toBeNull();
    expect(await eventuallyReleased()).toHaveLength(1);
    await host.app.close();
  });

  it('a decision released on the relay (native answer elsewhere) ends the hold', async () => {
    const host = await startHost(testConfig(home.root));
    const pending = callHook(host.url, host.hookToken, clarifyCall({ question: 'Q?' }));
    const id = await waitForDecision();
    await new Promise((resolve) => setTimeout(resolve, 50));
    relay.decisions.get(id)!.released = true;
    const { answer } = await pending;
    await host.app.close();
    expect(answer).toBeNull();
  });
});

describe('clarify answers', () => {
  it('strip "(recommended)", parse multi-select from JSON or CSV', () => {
    expect(stripRecommended('v1.4 (Recommended)')).toBe('v1.4');
    expect(parseMultiSelect('["a","b (recommended)"]')).toEqual(['a', 'b']);
    expect(parseMultiSelect('a, b ,c')).toEqual(['a', 'b', 'c']);
    const request = normaliseClarify({ questions: [{ question: 'x', multi_select: true }] })!;
    expect(clarifyResult(request, { q0: 'p,q' })).toEqual({
      responses: [{ id: 'q0', question: 'x', choices_offered: [], user_response: ['p', 'q'] }],
    });
  });
  it('poll 2, 4, 8, 10, 10… seconds', () => {
    expect([0, 1, 2, 3, 4, 9].map((s) => pollDelayMs(s, 2000))).toEqual([2000, 4000, 8000, 10000, 10000, 10000]);
  });
});

describe('shutdown', () => {
  it('a held clarify call returns at once (native path) and its decision is released when the service stops', async () => {
    const host = await startHost(testConfig(home.root, { limits: { clarifyPollMs: 1000 } }));
    const pending = callHook(host.url, host.hookToken, clarifyCall({ question: 'Still there?' }));
    await waitForDecision();
    const started = Date.now();
    const closing = host.app.close();
    const { answer } = await pending;
    await closing;
    expect(answer).toBeNull();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await eventuallyReleased()).toHaveLength(1);
  });
});
