import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Host } from '../../src/app.js';
import { ManualTimers } from '../../src/kernel/timers.js';
import { memoryLogger } from '../../src/log.js';
import { ManualClock, TEST_TOKEN, tempHermesHome, testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { googleAuthTokens, ProviderStandIn } from '../support/provider-stand-ins.js';

const DEFAULT_KEY = 'AIzaSy-default-profile-key-0123456789';
const WORK_KEY = 'AIzaSy-work-profile-key-9876543210';
const PREFIX = '/api/plugins/conduit_push';

const home = tempHermesHome();
const google = new ProviderStandIn(googleAuthTokens(DEFAULT_KEY, WORK_KEY));
const clock = new ManualClock(Date.UTC(2026, 11, 2, 11, 0, 0, 250));
const timers = new ManualTimers();
const log = memoryLogger();
/** Every response body the tests received, scanned at the end for a key. */
const answered: string[] = [];
let host: Host & { url: string };

async function call(
  method: 'GET' | 'POST',
  route: string,
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(host.url + PREFIX + route, {
    method,
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  const text = await response.text();
  answered.push(text);
  return { status: response.status, headers: response.headers, body: JSON.parse(text) as Record<string, unknown> };
}

beforeAll(async () => {
  writeFileSync(path.join(home.root, '.env'), `GEMINI_API_KEY=${DEFAULT_KEY}\n`);
  writeFileSync(
    path.join(home.root, 'profiles', 'work', '.env'),
    `GOOGLE_API_KEY="${WORK_KEY}"\nCONDUIT_GEMINI_LIVE_MODEL=models/gemini-live-work\n`,
  );
  mkdirSync(path.join(home.root, 'profiles', 'nokey'));
  await google.start();
  host = await startHost(testConfig(home.root, { clock, timers, log, upstreams: { google: google.url } }));
});
afterAll(async () => {
  await host.app.close();
  await google.stop();
  home.cleanup();
});
beforeEach(() => {
  // A fresh minute for every test: the limiter's window is the injected clock's.
  clock.advance(60_000);
});

describe('GET /gemini-live/status', () => {
  it('is available with the default model where the profile has GEMINI_API_KEY', async () => {
    const { status, body, headers } = await call('GET', '/gemini-live/status');
    expect(status).toBe(200);
    expect(body).toEqual({ ok: true, available: true, model: 'gemini-3.8-live' });
    expect(headers.get('cache-control')).toBe('no-store');
  });

  it("reads the named profile's GOOGLE_API_KEY and model override, models/ stripped", async () => {
    const { body } = await call('GET', '/gemini-live/status?profile=work');
    expect(body).toEqual({ ok: true, available: true, model: 'gemini-live-work' });
  });

  it('says no_api_key for a profile without a key, never borrowing the default profile key', async () => {
    const { status, body } = await call('GET', '/gemini-live/status?profile=nokey');
    expect(status).toBe(200);
    expect(body).toEqual({ ok: true, available: false, reason: 'no_api_key', model: 'gemini-3.8-live' });
  });

  it('answers 503 for a profile that cannot be resolved, unknown or malformed', async () => {
    for (const name of ['ghost', 'Bad!Name', '..']) {
      const { status, body } = await call('GET', `/gemini-live/status?profile=${encodeURIComponent(name)}`);
      expect([name, status]).toEqual([name, 503]);
      expect(typeof body.detail).toBe('string');
    }
  });
});

describe('POST /gemini-live/token', () => {
  it("mints a one-use token locked to the model from Google's auth_tokens endpoint", async () => {
    const sent = google.nextCall();
    const { status, body, headers } = await call('POST', '/gemini-live/token');
    const upstream = await sent;
    expect(status).toBe(200);
    expect(headers.get('cache-control')).toBe('no-store');
    expect(headers.get('pragma')).toBe('no-cache');
    expect(upstream.url).toBe('/v1alpha/auth_tokens');
    expect(upstream.headers['x-goog-api-key']).toBe(DEFAULT_KEY);
    const now = clock.now();
    const seconds = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
    expect(upstream.body).toEqual({
      uses: 1,
      expireTime: seconds(now + 30 * 60_000),
      newSessionExpireTime: seconds(now + 60_000),
      bidiGenerateContentSetup: { model: 'models/gemini-3.8-live' },
      fieldMask: 'model',
    });
    expect(body).toEqual({
      ok: true,
      token: expect.stringMatching(/^auth_tokens\/[0-9a-f]{24}$/),
      expires_at: seconds(now + 30 * 60_000),
      new_session_expires_at: seconds(now + 60_000),
      model: 'gemini-3.8-live',
      websocket_url:
        'wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained',
    });
  });

  it("uses the named profile's own key", async () => {
    const sent = google.nextCall();
    const { status, body } = await call('POST', '/gemini-live/token?profile=work');
    expect(status).toBe(200);
    expect((await sent).headers['x-goog-api-key']).toBe(WORK_KEY);
    expect(body.model).toBe('gemini-live-work');
  });

  it('caps tokens at 20 a minute per profile; another profile and the next minute are unaffected', async () => {
    const before = google.calls.length;
    for (let i = 0; i < 20; i += 1) expect((await call('POST', '/gemini-live/token')).status).toBe(200);
    const refused = await call('POST', '/gemini-live/token?profile=current');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ detail: 'Too many Gemini Live token requests; try again shortly' });
    expect(google.calls.length - before).toBe(20);
    expect((await call('POST', '/gemini-live/token?profile=work')).status).toBe(200);
    clock.advance(60_000);
    expect((await call('POST', '/gemini-live/token')).status).toBe(200);
  });

  it('answers 503 without a key and counts nothing toward the cap', async () => {
    const before = google.calls.length;
    for (let i = 0; i < 25; i += 1) {
      const { status, body } = await call('POST', '/gemini-live/token?profile=nokey');
      expect(status).toBe(503);
      expect(body).toEqual({ detail: 'GEMINI_API_KEY is not set on this Hermes host' });
    }
    expect(google.calls.length).toBe(before);
  });

  it('answers 503 for an unresolvable profile and never asks Google with the default key', async () => {
    const before = google.calls.length;
    const { status } = await call('POST', '/gemini-live/token?profile=ghost');
    expect(status).toBe(503);
    expect(google.calls.length).toBe(before);
  });

  it("passes Google's refusal on as 502 with its status and message", async () => {
    google.answer = () => ({
      status: 403,
      body: {
        error: { code: 403, message: "Method doesn't allow unregistered callers.", status: 'PERMISSION_DENIED' },
      },
    });
    try {
      const { status, body } = await call('POST', '/gemini-live/token');
      expect(status).toBe(502);
      expect(body).toEqual({
        detail: "Google rejected the token request (403): Method doesn't allow unregistered callers.",
      });
    } finally {
      google.answer = googleAuthTokens(DEFAULT_KEY, WORK_KEY);
    }
  });

  it("answers Google's own expiry times when its token carries them", async () => {
    google.answer = () => ({
      status: 200,
      body: {
        name: 'auth_tokens/abc',
        expireTime: '2026-12-02T11:30:00.123Z',
        newSessionExpireTime: '2026-12-02T11:01:00Z',
      },
    });
    try {
      expect((await call('POST', '/gemini-live/token')).body).toMatchObject({
        token: 'auth_tokens/abc',
        expires_at: '2026-12-02T11:30:00.123Z',
        new_session_expires_at: '2026-12-02T11:01:00Z',
      });
    } finally {
      google.answer = googleAuthTokens(DEFAULT_KEY, WORK_KEY);
    }
  });

  it('says when Google answered without a token or unreadably', async () => {
    try {
      google.answer = () => ({ status: 200, body: { uses: 1 } });
      expect((await call('POST', '/gemini-live/token')).body).toEqual({
        detail: "Google's token response had no token",
      });
      google.answer = () => ({ status: 200, body: '<html>captive portal</html>' });
      expect((await call('POST', '/gemini-live/token')).body).toEqual({
        detail: 'Google returned an unreadable token response',
      });
      // An answer far larger than any token is not read whole.
      google.answer = () => ({ status: 200, body: JSON.stringify({ name: 'x'.repeat(3 * 1024 * 1024) }) });
      expect((await call('POST', '/gemini-live/token')).body).toEqual({
        detail: 'Google returned an unreadable token response',
      });
    } finally {
      google.answer = googleAuthTokens(DEFAULT_KEY, WORK_KEY);
    }
  });

  it('answers 502 "Could not reach Google" once the 15 s deadline passes on a hung request', async () => {
    let release: () => void = () => undefined;
    google.answer = () =>
      new Promise((resolve) => {
        release = () => resolve({ status: 200, body: { name: 'auth_tokens/late' } });
      });
    try {
      const arrived = google.nextCall();
      const pending = call('POST', '/gemini-live/token');
      await arrived;
      await timers.untilWaiting(1);
      timers.advance(14_999);
      expect(timers.waiting).toBe(1);
      timers.advance(1);
      const { status, body } = await pending;
      expect(status).toBe(502);
      expect(body).toEqual({ detail: 'Could not reach Google' });
    } finally {
      release();
      google.answer = googleAuthTokens(DEFAULT_KEY, WORK_KEY);
    }
  });

  it('answers 502 "Could not reach Google" when nothing listens there', async () => {
    const closed = new ProviderStandIn(googleAuthTokens(DEFAULT_KEY));
    const url = await closed.start();
    await closed.stop();
    const other = await startHost(testConfig(home.root, { clock, timers, log, upstreams: { google: url } }));
    try {
      const response = await fetch(`${other.url}${PREFIX}/gemini-live/token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_TOKEN}` },
      });
      const text = await response.text();
      answered.push(text);
      expect([response.status, JSON.parse(text)]).toEqual([502, { detail: 'Could not reach Google' }]);
    } finally {
      await other.app.close();
    }
  });

  it('never puts a key in a response body or a log line', () => {
    expect(answered.length).toBeGreaterThan(30);
    expect(log.lines.some((line) => line.includes('gemini live token minted'))).toBe(true);
    for (const text of [...answered, ...log.lines]) {
      expect(text).not.toContain(DEFAULT_KEY);
      expect(text).not.toContain(WORK_KEY);
    }
  });
});
