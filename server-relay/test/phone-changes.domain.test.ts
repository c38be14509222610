/**
 * The pure rules behind phone.changes and location.request: validation of `mode` and of the sealed
 * requirement, and the two push builders with a fixed clock and a dashboard-bound gateway.
 */
import { describe, expect, it } from 'vitest';
import { validateEvent, type SealedEvent } from '../src/domain/events.js';
import { locationQueryPush } from '../src/domain/location-push.js';
import { backgroundChangesPush } from '../src/domain/phone-changes.js';
import { sealedEnvelope } from './support/sealed-event.js';

const NOW_MS = Date.UTC(2026, 10, 29, 12, 0, 0);
const NOW_S = NOW_MS / 1000;
const SCOPE = { gatewayId: 'gw-1', dashboardId: '6f1c2d3e-4a5b-4c7d-8e9f-0a1b2c3d4e5f' };
const envelopeAt = (id: string) => ({ ...sealedEnvelope(id), iat: NOW_S });

function valid(body: Record<string, unknown>) {
  const result = validateEvent(body, NOW_MS);
  if (!result.ok) throw new Error(`expected a valid event, got ${result.code}`);
  return result.event;
}

describe('validateEvent for the added types', () => {
  it.each([
    [undefined, 'alert'],
    [null, 'alert'],
    ['alert', 'alert'],
    ['background', 'background'],
  ])('phone.changes with mode %j is mode %s', (mode, expected) => {
    expect(valid({ type: 'phone.changes', event_id: 'evt-00000001', mode }).mode).toBe(expected);
  });

  it('keeps mode on a sealed phone.changes and refuses a bad one before looking at the envelope', () => {
    const id = 'evt-sealed-01';
    expect(valid({ type: 'phone.changes', event_id: id, mode: 'background', e2e: envelopeAt(id) }).mode).toBe(
      'background',
    );
    expect(validateEvent({ type: 'phone.changes', event_id: id, mode: 'quiet', e2e: 'broken' }, NOW_MS)).toEqual({
      ok: false,
      code: 'invalid_mode',
    });
  });

  it('drops mode on other types', () => {
    expect(valid({ type: 'response.ready', event_id: 'evt-00000002', mode: 'whatever' }).mode).toBeUndefined();
  });

  it('refuses a plaintext location.request and accepts a sealed one', () => {
    expect(validateEvent({ type: 'location.request', event_id: 'loc-00000001', title: 'x' }, NOW_MS)).toEqual({
      ok: false,
      code: 'invalid_e2e',
    });
    const id = 'loc-00000002';
    expect(valid({ type: 'location.request', event_id: id, e2e: envelopeAt(id) }).e2e).toEqual(envelopeAt(id));
  });
});

describe('push builders', () => {
  it('the background nudge carries the dashboard binding and expires a day later', () => {
    const event = valid({ type: 'phone.changes', event_id: 'evt-00000003', mode: 'background', title: 'secret' });
    expect(backgroundChangesPush(event, SCOPE, { nowMs: NOW_MS })).toEqual({
      payload: {
        aps: { 'content-available': 1 },
        conduit: { type: 'phone.changes', mode: 'background', gateway_id: 'gw-1', dashboard_id: SCOPE.dashboardId },
      },
      pushType: 'background',
      priority: 5,
      expiration: NOW_S + 86_400,
    });
  });

  it('the location push goes to <topic>.location-query at priority 10 and expires five minutes later', () => {
    const id = 'loc-00000003';
    const event = valid({ type: 'location.request', event_id: id, e2e: envelopeAt(id) }) as SealedEvent;
    expect(locationQueryPush(event, SCOPE, { topic: 'com.example.app', nowMs: NOW_MS })).toEqual({
      payload: {
        aps: {},
        conduit: { type: 'location.request', e2e: 1, gateway_id: 'gw-1', dashboard_id: SCOPE.dashboardId },
        conduit_e2e: envelopeAt(id),
      },
      pushType: 'location',
      topic: 'com.example.app.location-query',
      priority: 10,
      expiration: NOW_S + 300,
    });
  });
});
