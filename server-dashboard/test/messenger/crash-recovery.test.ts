/**
 * Reliability under kill -9: the connector process is killed at random points while the fake Relay
 * streams 1,000 inbound messages, and restarted each time. Every message must produce exactly one
 * Hermes turn and exactly one reply, no ACK may reach Relay before its event is committed, and the
 * acknowledged checkpoint must never move backward.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Inbox } from '../../src/messenger/inbox.js';
import { inboundMessage } from './fakes/fake-relay.js';
import { RELAY_TOKEN, startFakes, waitFor, type Fakes } from './harness.js';
import { spawnConnector, type ConnectorProcess } from './process.js';

const MESSAGES = 1_000;
const CHATS = 25;
const KILLS = 6;

/** A small seeded generator so a failing run can be replayed with the printed seed. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let fakes: Fakes;
let current: ConnectorProcess | null = null;
let reader: Database.Database | null = null;

beforeAll(async () => {
  fakes = await startFakes({
    script: async (run, ctl) => {
      // A little work per turn, so kills land mid-turn as well as between turns.
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4)));
      ctl.emit('run.completed', { output: `answer to ${run.input}` });
    },
    relay: { maxInFlight: 50 },
  });
});

afterAll(async () => {
  if (current !== null) {
    current.child.kill('SIGKILL');
    await current.exited;
  }
  reader?.close();
  await fakes.close();
});

describe('connector crash recovery', () => {
  it(
    'kill -9 at random points while 1,000 messages stream: one turn and one reply each, no ACK before commit, checkpoint never backward',
    { timeout: 300_000 },
    async () => {
      const seed = Number(process.env['MESSENGER_CRASH_SEED'] ?? Date.now() % 1_000_000);
      const random = mulberry32(seed);
      const dbFile = path.join(fakes.stateDir, 'inbox.sqlite3');
      const ackBeforeCommit: string[] = [];
      const backward: string[] = [];
      fakes.relay['o'].onAck = (through) => {
        // The connector ACKs only after its commit, so the committed row must already be visible here.
        if (reader === null && fs.existsSync(dbFile))
          reader = new Database(dbFile, { readonly: true, fileMustExist: true });
        const row = reader?.prepare('SELECT 1 FROM deliveries WHERE sequence = ?').get(through);
        if (row === undefined) ackBeforeCommit.push(String(through));
        if (through <= fakes.relay.ackedThrough) backward.push(`${through} <= ${fakes.relay.ackedThrough}`);
      };

      const chats = Array.from({ length: CHATS }, () => ({ chatId: randomUUID(), senderId: randomUUID() }));
      const events = Array.from({ length: MESSAGES }, (_, i) => {
        const c = chats[i % CHATS] ?? chats[0]!;
        return inboundMessage({ chatId: c.chatId, senderId: c.senderId, text: `message ${i}` });
      });
      const eventIds = events.map((e) => String(e['event_id']));

      const env = fakes.env();
      current = spawnConnector('start', env);
      // Stream in waves so kills land during intake as well as during turns.
      let pushed = 0;
      const pushMore = (n: number) => {
        fakes.relay.push(...events.slice(pushed, pushed + n));
        pushed = Math.min(MESSAGES, pushed + n);
      };
      pushMore(300);

      const repliesFor = () => {
        const keys = new Set<string>();
        for (const m of fakes.relay.messages.values()) if (m.idempotencyKey !== null) keys.add(m.idempotencyKey);
        return keys;
      };

      const kills: string[] = [];
      for (let k = 0; k < KILLS; k++) {
        // Kill after a random amount of further progress: ACKs, runs, or replies.
        const phase = Math.floor(random() * 3);
        const step = 20 + Math.floor(random() * 120);
        const startAcked = fakes.relay.ackedThrough;
        const startRuns = fakes.hermes.createdRuns.length;
        const startReplies = fakes.relay.messages.size;
        await waitFor(
          () =>
            (phase === 0 &&
              fakes.relay.ackedThrough >= startAcked + BigInt(Math.min(step, pushed - Number(startAcked)))) ||
            (phase === 1 && fakes.hermes.createdRuns.length >= Math.min(startRuns + step, pushed)) ||
            (phase === 2 && fakes.relay.messages.size >= Math.min(startReplies + step, pushed)) ||
            fakes.relay.messages.size >= pushed,
          60_000,
          `progress before kill ${k}`,
        );
        current.child.kill('SIGKILL');
        await current.exited;
        kills.push(
          `phase ${phase} acked=${fakes.relay.ackedThrough} runs=${fakes.hermes.createdRuns.length} replies=${fakes.relay.messages.size}`,
        );
        if (k === 1) pushMore(400);
        if (k === 3) pushMore(MESSAGES);
        current = spawnConnector('start', env);
      }
      pushMore(MESSAGES);

      const last = current;
      await waitFor(
        () => fakes.relay.messages.size >= MESSAGES && repliesFor().size >= MESSAGES,
        240_000,
        `all replies (seed ${seed}; ${last.output().slice(-2000)})`,
      );
      await waitFor(() => fakes.relay.ackedThrough === BigInt(MESSAGES), 30_000, 'all acknowledged');
      last.child.kill('SIGTERM');
      expect(await last.exited).toBe(0);

      const context = `seed ${seed}; kills: ${kills.join(' | ')}`;
      expect(ackBeforeCommit, context).toEqual([]);
      expect(backward, context).toEqual([]);
      expect(fakes.relay.contractViolations, context).toEqual([]);

      // Exactly one Hermes run per message, keyed by its event.
      const runKeys = fakes.hermes.createdRuns.map((r) => r.key);
      expect(runKeys.length, context).toBe(MESSAGES);
      expect(new Set(runKeys)).toEqual(new Set(eventIds.map((id) => `relay-turn-${id}`)));

      // Exactly one stored reply per message (resends after a crash reuse the key and are deduplicated).
      const perEvent = new Map<string, number>();
      for (const m of fakes.relay.messages.values()) {
        const id = /^reply-(.+)-(\d+)$/.exec(m.idempotencyKey ?? '')?.[1];
        if (id !== undefined) perEvent.set(id, (perEvent.get(id) ?? 0) + 1);
      }
      expect(fakes.relay.messages.size, context).toBe(MESSAGES);
      expect(
        eventIds.every((id) => perEvent.get(id) === 1),
        context,
      ).toBe(true);

      reader?.close();
      reader = null;
      const inbox = Inbox.open({
        stateDir: fakes.stateDir,
        apiOrigin: fakes.relay.url,
        agentToken: RELAY_TOKEN,
        readOnly: true,
      });
      try {
        expect(inbox.backlog()).toMatchObject({ completed: MESSAGES, pending: 0, processing: 0, dispatched: 0 });
        expect(inbox.checkpoint()).toBe(BigInt(MESSAGES));
      } finally {
        inbox.close();
      }
      console.log(
        `crash test: ${context}; Hermes run replays after restarts: ${fakes.hermes.posts.filter((p) => p.replayed).length}`,
      );
    },
  );
});
