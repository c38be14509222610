/**
 * Two helpers on every event's path, kept cheap without changing what they answer: the access log's
 * path redaction (which remembers paths that hold nothing to redact) and the deferred last-seen record
 * (merged in place).
 */
import { describe, expect, it } from 'vitest';
import { loggablePath } from '../src/http/loggable-path.js';
import { DeferredActivity } from '../src/store/deferred-activity.js';
import type { RelayStore } from '../src/store/relay-store.js';

describe('loggablePath', () => {
  it('answers the same the first time and every time after, for plain and secret paths alike', () => {
    const token = 'ab'.repeat(32);
    const cases: [string, string][] = [
      ['/v1/events', '/v1/events'],
      ['/v1/events?debug=1', '/v1/events'],
      [`/v1/live-activities/${token}`, '/v1/live-activities/:redacted'],
      ['/v1/pairings/ABCDE-23456', '/v1/pairings/:redacted'],
      [
        '/v1/installations/11111111-2222-4333-8444-555555555555',
        '/v1/installations/11111111-2222-4333-8444-555555555555',
      ],
    ];
    for (let round = 0; round < 3; round += 1) {
      for (const [url, logged] of cases) expect(loggablePath(url)).toBe(logged);
    }
  });

  it('keeps answering once more distinct plain paths went by than it remembers', () => {
    for (let n = 0; n < 3_000; n += 1) expect(loggablePath(`/v1/unknown-${n}`)).toBe(`/v1/unknown-${n}`);
    expect(loggablePath(`/v1/x/${'cd'.repeat(32)}`)).toBe('/v1/x/:redacted');
  });
});

describe('DeferredActivity.record', () => {
  const store = {} as RelayStore; // never flushed here
  it('merges later fields into the pending entry without touching the objects it was given', () => {
    const activity = new DeferredActivity(store, 60_000, () => undefined);
    const first = { pluginVersion: '1.2.0', pluginCapabilities: ['decisions'], lastEventAt: 1_000 };
    const second = { lastEventAt: 2_000 };
    activity.record('inst', 'gw', first);
    activity.record('inst', 'gw', second);
    activity.record('inst', 'gw', { pluginVersion: '1.3.0' });
    expect(activity.overlay('inst', 'gw')).toEqual({
      pluginVersion: '1.3.0',
      pluginCapabilities: ['decisions'],
      lastEventAt: 2_000,
    });
    expect(first).toEqual({ pluginVersion: '1.2.0', pluginCapabilities: ['decisions'], lastEventAt: 1_000 });
    expect(second).toEqual({ lastEventAt: 2_000 });
    expect(activity.overlay('inst', 'other')).toBeUndefined();
  });
});
