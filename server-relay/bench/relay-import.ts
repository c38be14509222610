/**
 * `npm run bench:relay-import` — how long the one-time import of a reference
 * relay.json takes. Generates a store as the reference relay writes it (50,000 installations by
 * default: a fifth paired with a host, some with PushKit tokens, a seventh inactive, live pairing codes
 * and parked decisions, a few malformed records), then times:
 *
 *   - the import itself (`importReferenceJson`: read and check the file, plan the rows, byte-exact
 *     backup, one transaction of batched inserts) into a migrated SQLite database and a PostgreSQL
 *     database, with the read and plan phases also timed on their own;
 *     (wall time, and this process's CPU time, which hardly depends on what else the machine runs:
 *     on SQLite it is all of the work, on PostgreSQL the server's share is not in it);
 *   - the operator's command end to end on SQLite (`import-json FILE` as a new process: Node and tsx
 *     start-up, migrations, import).
 *
 * Prints one table; not a test (figures depend on the machine). Options: BENCH_IMPORT_INSTALLATIONS
 * (default 50000), BENCH_STORES=sqlite,postgres, DATABASE_URL_PG (else the local server at
 * 127.0.0.1:5432, else embedded PostgreSQL).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, migrate, providerOf } from '@conduit/prisma';
import { acquirePostgres } from '@conduit/prisma/testing/postgres';
import { importReferenceJson, planImport, readReferenceStore } from '../src/store/import-json.js';
import { runRelayAsync } from '../test/support/relay-process.js';

const INSTALLATIONS = Number(process.env.BENCH_IMPORT_INSTALLATIONS ?? 50_000);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',') as ('sqlite' | 'postgres')[];
const TOPIC = 'com.example.bench';
const sha = (value: string) => createHash('sha256').update(value).digest('hex');

/** A reference store of `count` installations, serialised compact + "\n" as the reference saves it. */
function referenceStore(count: number): string {
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  const installations: Record<string, unknown> = {};
  const pairings: Record<string, unknown> = {};
  const pendingDecisions: Record<string, unknown> = {};
  for (let i = 0; i < count; i += 1) {
    const id = randomUUID();
    const gateways: Record<string, unknown> = {};
    if (i % 5 === 0) {
      const gatewayId = randomUUID();
      gateways[gatewayId] = {
        id: gatewayId,
        name: 'Hermes gateway',
        secretHash: sha(`gateway-${i}`),
        createdAt: iso(now - 86_400_000),
        pluginVersion: '0.35.0',
        pluginCapabilities: ['e2e-v1', 'calls'],
        lastEventAt: iso(now - 60_000),
      };
      if (i % 100 === 0) {
        pendingDecisions[`${id}:${gatewayId}:req-${i}`] = {
          id: `req-${i}`,
          installationId: id,
          gatewayId,
          question: 'Ship it?',
          choices: ['yes', 'no'],
          questions: [],
          answers: {},
          deliverable: true,
          createdAt: now - 60_000,
        };
      }
    }
    if (i % 500 === 1) pairings[sha(`code-${i}`)] = { installationId: id, expiresAt: iso(now + 5 * 60_000) };
    installations[id] = {
      id,
      bundleId: TOPIC,
      deviceToken: randomBytes(32).toString('hex'),
      ...(i % 10 === 0 ? { voipToken: randomBytes(32).toString('hex') } : {}),
      environment: 'production',
      deviceSecretHash: sha(`device-${i}`),
      gateways,
      active: i % 7 !== 0,
      preferences: { enabled: true, show_previews: i % 3 === 0 },
      createdAt: iso(now - 30 * 86_400_000),
      updatedAt: iso(now - 86_400_000),
    };
  }
  // What a long-lived store accumulates: records the reference loads as they are, and records it drops.
  installations[randomUUID()] = { active: true, deviceSecretHash: sha('legacy') };
  installations['not-an-object'] = null;
  pairings[sha('expired')] = { installationId: randomUUID(), expiresAt: iso(now - 60_000) };
  return `${JSON.stringify({ version: 1, installations, pairings, pendingDecisions, eventIds: {} })}\n`;
}

async function database(
  kind: 'sqlite' | 'postgres',
  dir: string,
): Promise<{ url: string; release: () => Promise<void> }> {
  if (kind === 'sqlite') return { url: path.join(dir, `${randomUUID()}.sqlite`), release: async () => undefined };
  return acquirePostgres({
    ...process.env,
    DATABASE_URL_PG: process.env.DATABASE_URL_PG ?? 'postgresql://postgres@127.0.0.1:5432/postgres',
  });
}

const ms = (since: number) => Math.round(performance.now() - since);

const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-import-bench-'));
const rows: string[] = [];
try {
  let started = performance.now();
  const text = referenceStore(INSTALLATIONS);
  const generatedMs = ms(started);
  const file = path.join(dir, 'relay.json');
  writeFileSync(file, text, { mode: 0o600 });
  console.log(
    `reference store: ${INSTALLATIONS.toLocaleString('en')} installations, ${(text.length / 1e6).toFixed(1)} MB (generated in ${generatedMs} ms)`,
  );

  started = performance.now();
  const store = readReferenceStore(file);
  const readMs = ms(started);
  started = performance.now();
  const plan = planImport(store.data, Date.now());
  const planMs = ms(started);
  const planned = plan.installations.length + plan.gateways.length + plan.pairings.length + plan.decisions.length;

  for (const kind of STORES) {
    const db = await database(kind, dir);
    try {
      started = performance.now();
      await migrate(db.url);
      const migrateMs = ms(started);
      const client = createDb(db.url);
      try {
        // Each run backs up the file under a new name, so it needs its own copy.
        const copy = path.join(dir, `${kind}-relay.json`);
        writeFileSync(copy, text, { mode: 0o600 });
        started = performance.now();
        const cpuBefore = process.cpuUsage();
        const summary = await importReferenceJson(client, providerOf(db.url), copy);
        const importMs = ms(started);
        const cpu = process.cpuUsage(cpuBefore);
        const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
        const stored = await client.installation.count();
        if (stored !== summary.installations) throw new Error(`${kind}: ${stored} rows after the import`);
        rows.push(
          `| ${kind} | in process | ${summary.installations.toLocaleString('en')} | ${summary.gateways} | ${summary.pairings} | ${summary.decisions} | ${summary.skipped.total} | ${readMs} | ${planMs} | ${importMs} | ${cpuMs} | ${migrateMs} |`,
        );
      } finally {
        await client.$disconnect();
      }
    } finally {
      await db.release();
    }
  }

  if (STORES.includes('sqlite')) {
    const cliDir = path.join(dir, 'cli');
    mkdirSync(cliDir);
    const copy = path.join(cliDir, 'relay.json');
    writeFileSync(copy, text, { mode: 0o600 });
    started = performance.now();
    const result = await runRelayAsync(['import-json', copy], {
      DATA_PATH: copy,
      DATABASE_URL: '',
      PUBLIC_URL: 'https://bench.example.test',
      APNS_TOPIC: TOPIC,
      APNS_MODE: 'accept',
    });
    const cliMs = ms(started);
    if (result.status !== 0) throw new Error(`import-json failed: ${result.stderr}`);
    const summary = JSON.parse(result.stdout) as { installations: number; skipped: { total: number } };
    rows.push(
      `| sqlite | \`import-json\` process, end to end | ${summary.installations.toLocaleString('en')} | | | | ${summary.skipped.total} | | | ${cliMs} | | |`,
    );
  }

  console.log(
    `planned rows: ${planned.toLocaleString('en')}; load average ${os
      .loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}; ${os.cpus().length} cores; Node ${process.version}`,
  );
  console.log('');
  console.log(
    '| store | run | installations | gateways | pairings | decisions | skipped | read+check ms | plan ms | import ms | import CPU ms (this process) | migrate ms |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
