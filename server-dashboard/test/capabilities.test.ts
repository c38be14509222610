import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardClient } from '@conduit/generated/dashboard/client';
import { buildApp } from '../src/app.js';

let app: FastifyInstance;
let baseUrl: string;
let diskVersion = '0.1.0';

beforeAll(async () => {
  app = await buildApp({ host: '127.0.0.1', port: 0, loadedVersion: '0.1.0', readDiskVersion: () => diskVersion });
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

describe('GET /api/plugins/conduit_push/capabilities', () => {
  it('lists version, loaded_version, boot_id and capabilities through the generated client', async () => {
    const client = createDashboardClient({ baseUrl });
    const { data, response } = await client.GET('/api/plugins/conduit_push/capabilities');
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ ok: true, version: '0.1.0', loaded_version: '0.1.0', restart_needed: false });
    expect(data?.boot_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Array.isArray(data?.capabilities)).toBe(true);
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
