import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardClient } from '@conduit/sdk/dashboard';
import { dashboardSurface } from '@conduit/contracts/dashboard/index';
import { buildApp, buildHost } from '../src/app.js';
import { HOST_FEATURES } from '../src/features/index.js';
import { CAPABILITY_PATHS, servedCapabilities } from '../src/routes/capabilities.js';
import { TEST_TOKEN, tempHermesHome, testConfig } from './support/config.js';

let app: FastifyInstance;
let baseUrl: string;
let diskVersion = '0.1.0';
const home = tempHermesHome();

beforeAll(async () => {
  app = await buildApp(testConfig(home.root, { readDiskVersion: () => diskVersion }));
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await app.close();
  home.cleanup();
});

describe('GET /api/plugins/conduit_push/capabilities', () => {
  it('lists version, loaded_version, boot_id and exactly the served capabilities, without auth', async () => {
    const client = createDashboardClient({ baseUrl });
    const { data, response } = await client.GET('/api/plugins/conduit_push/capabilities');
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ ok: true, version: '0.1.0', loaded_version: '0.1.0', restart_needed: false });
    expect(data?.boot_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(data?.capabilities).toEqual([
      'gemini-live',
      'web-search',
      'memory',
      'personality',
      'gpt-live',
      'grok-live',
      'voice-sessions',
      'voice-tags',
      'voice-summary',
      'session-takeover',
      'e2e-notifications',
      'watch-tools',
      'watch-jobs',
      'watch-job-follow-ups',
      'watch-live-token',
      'watch-audio',
      'desktop-views',
      'hermes-calls',
      'hermes-call-presence',
      'hermes-call-outcomes',
      'local-live',
      'room-files',
      'room-images',
      'artifacts',
      'health',
      'location',
      'phone',
      'phone-changes',
      'voice-tools',
      'present',
      'conduit-settings',
      'watch-chats',
      'cron-notifications',
      'reply-sources',
      'approval-answers',
      'pairing',
    ]);
  });

  it('says restart_needed when the code on disk is newer than the code loaded, with the same boot_id', async () => {
    const client = createDashboardClient({ baseUrl });
    const before = await client.GET('/api/plugins/conduit_push/capabilities');
    diskVersion = '0.2.0';
    const after = await client.GET('/api/plugins/conduit_push/capabilities');
    diskVersion = '0.1.0';
    expect(after.data).toMatchObject({ version: '0.2.0', loaded_version: '0.1.0', restart_needed: true });
    expect(after.data?.boot_id).toBe(before.data?.boot_id);
  });
});

describe('capabilities are derived from the registered features', () => {
  it('lists only the features registered (the app above lists those of every feature, with no provider configured)', async () => {
    const without = await buildHost(testConfig(home.root), { features: [] });
    try {
      const response = await without.app.inject({ method: 'GET', url: '/api/plugins/conduit_push/capabilities' });
      expect(response.json<{ capabilities: string[] }>().capabilities).toEqual(Object.keys(CAPABILITY_PATHS));
    } finally {
      await without.app.close();
    }
  });
});

describe('feature routes are behind the caller check', () => {
  it('answers 401 to every authenticated route of the contract without credentials, before any work', async () => {
    // Every route the contract says needs the caller's credential, so a new feature route is covered too.
    const routes = Object.values(dashboardSurface.routes).filter((route) => route.auth === 'bearer');
    expect(routes.length).toBeGreaterThan(15);
    for (const route of routes) {
      const response = await fetch(baseUrl + route.path, {
        method: route.method,
        headers: { 'content-type': 'application/json' },
        ...(route.method === 'POST' ? { body: '{"query":"q"}' } : {}),
      });
      expect([route.path, response.status, await response.json()]).toEqual([
        route.path,
        401,
        { error: 'unauthorized' },
      ]);
    }
  });
});

describe('every listed capability is served', () => {
  it('answers on its route family (authenticated), never 404', async () => {
    for (const { name: capability, ...route } of servedCapabilities(HOST_FEATURES)) {
      const response = await fetch(baseUrl + route.path, {
        method: route.method,
        headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
        ...(route.method !== 'GET' ? { body: '{}' } : {}),
      });
      // A GET answers 200; a POST or PUT with an empty object answers its validation error, never 404.
      expect([capability, response.status]).toEqual([capability, route.method === 'GET' ? 200 : 400]);
    }
  });
});
