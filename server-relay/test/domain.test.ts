/** The pure rules: payloads, ledger bounds, preferences, decisions, limits, ring sessions. */
import { describe, expect, it } from 'vitest';
import { contextLine, plainAlert, scopeToken, sealedAlert, soundFor } from '../src/domain/alert-payload.js';
import { stopPushFor } from '../src/domain/call-push.js';
import { applyAnswer, pollShape, resolveLegacyTarget, type DecisionRecord } from '../src/domain/decisions.js';
import { sanitizeBatchQuestions, validateEvent, type PlainEvent, type SealedEvent } from '../src/domain/events.js';
import { deliversType, normalizePreferences } from '../src/domain/preferences.js';
import { normalizeDeviceToken } from '../src/domain/device-tokens.js';
import { newPairingCode, pairingCodeHash, parseDashboardId } from '../src/domain/pairing-code.js';
import { cleanText } from '../src/domain/text.js';
import { MemoryEventLedger } from '../src/ephemeral/event-ledger.js';
import { MemoryRateLimiter } from '../src/ephemeral/rate-limiter.js';
import { MemoryRingSessionStore } from '../src/ephemeral/ring-sessions.js';
import { readLimits } from '../src/limits.js';

const prefs = normalizePreferences({});
const scope = { gatewayId: 'gw-1', dashboardId: null };

describe('limits table', () => {
  it('blank keeps the default; a non-positive-integer names the variable', () => {
    expect(readLimits({ RELAY_MAX_INSTALLATIONS: ' ' }).maxInstallations).toBe(50_000);
    expect(readLimits({ RELAY_MAX_INSTALLATIONS: ' 7 ' }).maxInstallations).toBe(7);
    for (const bad of ['-1', '0', '1e3', '99999999999999999999', 'x']) {
      expect(() => readLimits({ RELAY_EVENTS_PER_MINUTE: bad })).toThrow(
        'RELAY_EVENTS_PER_MINUTE must be a positive integer.',
      );
    }
  });
});

describe('text, tokens, codes', () => {
  it('cleans control characters, trims, cuts, and drops empties', () => {
    expect(cleanText(' a\u0000b\n ', 10)).toBe('a b');
    expect(cleanText('   ', 10)).toBeUndefined();
    expect(cleanText(5, 10)).toBeUndefined();
  });

  it('normalises device tokens the way the app sends them', () => {
    expect(normalizeDeviceToken(`<${'AB CD '.repeat(16)}>`)).toBe('abcd'.repeat(16));
    expect(normalizeDeviceToken('ab'.repeat(20))).toBeUndefined();
  });

  it('pairing codes use the unambiguous alphabet and hash by their normalised form', () => {
    const code = newPairingCode(() => Buffer.from([0, 1, 2, 3, 4, 31, 32, 63, 64, 255]));
    expect(code).toBe('ABCDE-9A9A9');
    expect(pairingCodeHash('abcde 9a9a9')).toBe(pairingCodeHash(code));
    expect(parseDashboardId('00000000-0000-0000-0000-000000000000')).toBeUndefined();
    expect(parseDashboardId(null)).toBeNull();
  });
});

describe('preferences', () => {
  it('non-booleans fall back to defaults and the gate follows the type switch', () => {
    const p = normalizePreferences({ enabled: 'yes', background_task_finished: false, show_previews: 1 });
    expect(p.enabled).toBe(true);
    expect(p.show_previews).toBe(false);
    expect(deliversType(p, 'background_task.finished')).toBe(false);
    expect(deliversType({ ...p, enabled: false }, 'response.ready')).toBe(false);
  });

  it('sounds: completion types follow completion_sound, attention types attention_sound, failures never', () => {
    expect(soundFor('response.ready', { ...prefs, completion_sound: false })).toBeUndefined();
    expect(soundFor('approval.needed', { ...prefs, attention_sound: false })).toBeUndefined();
    expect(soundFor('input.needed', prefs)).toBe('default');
    expect(soundFor('turn.failed', prefs)).toBeUndefined();
  });
});

describe('alert payloads', () => {
  const event = (extra: Partial<PlainEvent>): PlainEvent => ({
    type: 'input.needed',
    eventId: 'evt-00000001',
    ...extra,
  });

  it('previews show the event text; thread and collapse ids are scoped by gateway', () => {
    const push = plainAlert(
      event({ title: 'T', body: 'B', sessionId: 's1' }),
      { ...prefs, show_previews: true },
      scope,
    );
    expect((push.notification.payload.aps as { alert: unknown }).alert).toEqual({ title: 'T', body: 'B' });
    expect(push.notification.collapseId).toBe(`input.needed:${scopeToken('gw-1', 's1')}`);
    const other = plainAlert(event({ sessionId: 's1' }), prefs, { gatewayId: 'gw-2' });
    expect(other.notification.threadId).not.toBe(push.notification.threadId);
    expect(contextLine(undefined, undefined)).toBe('');
  });

  it('drops an oversized decision card whole (3,800 bytes) and keeps the alert', () => {
    const questions = Array.from({ length: 8 }, (_, i) => ({
      qid: `q${i}`,
      question: 'x'.repeat(480),
      choices: [],
      multi_select: false,
    }));
    const decision = { kind: 'clarify' as const, request_id: 'req-1', question: 'Q', choices: [], questions };
    const push = plainAlert(event({ decision }), prefs, scope);
    expect(push.cardDelivered).toBe(false);
    expect((push.notification.payload.body as { conduit: Record<string, unknown> }).conduit.decision).toBeUndefined();
    const small = plainAlert(event({ decision: { ...decision, questions: [] } }), prefs, scope);
    expect(small.cardDelivered).toBe(true);
    const cardsOff = plainAlert(
      event({ decision: { ...decision, questions: [] } }),
      { ...prefs, decision_cards: false },
      scope,
    );
    expect(cardsOff.cardDelivered).toBe(false);
  });

  it('an oversized sealed envelope is dropped with mutable-content, never truncated', () => {
    const sealed: SealedEvent = {
      type: 'input.needed',
      eventId: 'evt-00000001',
      e2e: {
        v: 1,
        kid: 'a'.repeat(32),
        msg: 'evt-00000001',
        iat: 1,
        tok: 'b'.repeat(16),
        z: 0,
        req: 'req-1',
        n: 'c'.repeat(16),
        ct: 'd'.repeat(2600),
      },
      clarify: { request_id: 'req-1', qids: [], card: true },
    };
    const fits = sealedAlert(sealed, prefs, scope);
    expect(fits.notification.payload.conduit_e2e).toBeDefined();
    expect(fits.cardDelivered).toBe(true);
    const big = sealedAlert({ ...sealed, e2e: { ...sealed.e2e, ct: 'd'.repeat(2600), kid: 'a'.repeat(32) } }, prefs, {
      gatewayId: 'g'.repeat(1200),
    });
    expect(big.notification.payload.conduit_e2e).toBeUndefined();
    expect((big.notification.payload.aps as Record<string, unknown>)['mutable-content']).toBeUndefined();
    expect(big.cardDelivered).toBe(false);
  });

  it('the stop push expires after a minute and carries start only when given', () => {
    const push = stopPushFor({ id: 'r', outcome: 'declined', by: 'phone' }, 'com.x.watchkitapp', 1_000_000);
    expect(push).toEqual({
      payload: { aps: {}, conduit: { ring: { id: 'r', settled: 'declined', by: 'phone' } } },
      pushType: 'voip',
      topic: 'com.x.watchkitapp.voip',
      expiration: 1060,
    });
  });
});

describe('event validation', () => {
  const now = Date.UTC(2026, 10, 29);
  it('drops an approval card with a missing part, and a call with one bad session id', () => {
    const approval = validateEvent(
      {
        type: 'approval.needed',
        event_id: 'evt-00000001',
        decision: { kind: 'approval', session_key: 's', description: '', choices: ['once'] },
      },
      now,
    );
    expect(approval.ok && !approval.event.e2e && approval.event.decision).toBeFalsy();
    const call = validateEvent(
      {
        type: 'call.requested',
        event_id: 'evt-00000001',
        call: { id: 'call-0001', kind: 'done', session_ids: ['ok', 'bad id'] },
      },
      now,
    );
    expect(call.ok && !call.event.e2e && call.event.call).toBeFalsy();
  });

  it('rejects a sealed envelope out of its time window or with a mismatched clarify id', () => {
    const e2e = {
      v: 1,
      kid: 'a'.repeat(32),
      msg: 'evt-00000001',
      iat: now / 1000,
      tok: 'b'.repeat(16),
      z: 1,
      req: 'req-1',
      n: 'c'.repeat(16),
      ct: 'd'.repeat(22),
    };
    expect(validateEvent({ type: 'input.needed', event_id: 'evt-00000001', e2e }, now).ok).toBe(true);
    expect(
      validateEvent(
        { type: 'input.needed', event_id: 'evt-00000001', e2e: { ...e2e, iat: now / 1000 - 26 * 3600 } },
        now,
      ),
    ).toEqual({
      ok: false,
      code: 'invalid_e2e',
    });
    expect(
      validateEvent({ type: 'input.needed', event_id: 'evt-00000001', e2e, clarify: { request_id: 'req-2' } }, now),
    ).toEqual({ ok: false, code: 'invalid_e2e' });
  });

  it('sanitises batch questions: 8 at most, first qid wins, reserved names dropped', () => {
    const questions = sanitizeBatchQuestions([
      { qid: 'a', question: 'one' },
      { qid: 'a', question: 'dup' },
      { qid: '__proto__', question: 'x' },
      ...Array.from({ length: 10 }, (_, i) => ({
        qid: `q${i}`,
        question: 'q',
        choices: [' c ', 'c', ''],
        multi_select: 'true',
      })),
    ]);
    expect(questions).toHaveLength(8);
    expect(questions[0]).toEqual({ qid: 'a', question: 'one', choices: [], multi_select: false });
    expect(questions[1]?.choices).toEqual(['c']);
  });
});

describe('decisions', () => {
  const base: DecisionRecord = {
    key: 'i:g:r',
    installationId: 'i',
    gatewayId: 'g',
    requestId: 'r',
    question: 'Q',
    choices: [],
    questions: [],
    answers: {},
    deliverable: true,
    createdAt: 0,
  };

  it('legacy answers: one live → it; several → ambiguous; released → 410; settled → 409; none → 404', () => {
    expect(resolveLegacyTarget([base])).toMatchObject({ ok: true });
    expect(resolveLegacyTarget([base, { ...base, key: 'i:h:r' }])).toMatchObject({
      status: 400,
      code: 'ambiguous_decision',
    });
    expect(resolveLegacyTarget([{ ...base, cancelledAt: 1 }])).toMatchObject({ status: 410 });
    expect(resolveLegacyTarget([{ ...base, answer: 'a' }])).toMatchObject({ status: 409 });
    expect(resolveLegacyTarget([])).toMatchObject({ status: 404 });
  });

  it('a missing deliverable flag polls as the stored value and expired decisions are unknown', () => {
    expect(pollShape(base, 1000)).toEqual({ status: 'pending', deliverable: true });
    expect(pollShape(base, 2 * 60 * 60 * 1000)).toEqual({ status: 'unknown' });
    const answered = applyAnswer(base, 'x', undefined, 5);
    expect(answered.ok && answered.decision.answer).toBe('x');
  });
});

describe('event ledger', () => {
  it('forgets the oldest id at the per-installation bound and never rejects', async () => {
    let now = 0;
    const ledger = new MemoryEventLedger({ ttlMs: 1000, perInstallation: 3, total: 100 }, () => now);
    for (const id of ['a', 'b', 'c', 'd']) expect(await ledger.add('i', 'g', id)).toBe(true);
    expect(await ledger.has('i', 'g', 'a')).toBe(false);
    expect(await ledger.has('i', 'g', 'd')).toBe(true);
    expect(await ledger.has('i', 'h', 'd')).toBe(false);
    now = 1000;
    expect(await ledger.has('i', 'g', 'd')).toBe(false);
  });

  it('at the relay-wide bound the installation holding most ids pays', async () => {
    const ledger = new MemoryEventLedger({ ttlMs: 10_000, perInstallation: 100, total: 10 }, () => 0);
    for (let i = 0; i < 8; i += 1) await ledger.add('heavy', 'g', `h${i}`);
    for (let i = 0; i < 3; i += 1) await ledger.add('light', 'g', `l${i}`);
    expect(ledger.count).toBeLessThanOrEqual(10);
    expect(await ledger.has('light', 'g', 'l0')).toBe(true);
    expect(await ledger.has('heavy', 'g', 'h0')).toBe(false);
  });
});

describe('rate limiter and ring sessions', () => {
  it('a fixed window: count > max is refused until the window resets', async () => {
    let now = 0;
    const limiter = new MemoryRateLimiter(() => now);
    const hits: boolean[] = [];
    for (let i = 0; i < 3; i += 1) hits.push(await limiter.hit('k', 2));
    expect(hits).toEqual([true, true, false]);
    now = 60_000;
    expect(await limiter.hit('k', 2)).toBe(true);
  });

  it('two waiters per ring, a third is busy; the total bound drops the oldest session', async () => {
    const store = new MemoryRingSessionStore({ ttlMs: 120_000, maxTotalChars: 10, maxWaiters: 2 }, () => 0);
    const first = store.take('r', 10_000);
    const second = store.take('r', 10_000);
    expect(store.take('r', 10_000)).toBe('busy');
    store.put('r', 'abcdef');
    expect(await first).toBe('abcdef');
    expect(await second).toBe('abcdef');
    store.put('s', 'ghijkl');
    expect(await store.take('r', 0)).toBeNull();
    expect(await store.take('s', 0)).toBe('ghijkl');
  });
});
