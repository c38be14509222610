import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { WebhookEnvelope } from '@conduit/contracts/messenger/envelope';
import { Inbox, InboxSequenceConflictError } from '../../src/messenger/inbox.js';
import {
  accountFingerprint,
  BINDING_FILE,
  RelayStateBindingError,
  tokenFingerprint,
} from '../../src/messenger/state-binding.js';
import { chatHandle, envelope, inboundMessage } from './fakes/fake-relay.js';
import { tempDir } from './harness.js';

const ORIGIN = 'https://api.relayapp.im';
const TOKEN = 'agent-token-A';

function open(dir: string, token = TOKEN, origin = ORIGIN): Inbox {
  return Inbox.open({ stateDir: dir, apiOrigin: origin, agentToken: token });
}

function env(): WebhookEnvelope {
  return inboundMessage({ chatId: randomUUID(), senderId: randomUUID() }) as unknown as WebhookEnvelope;
}

function reaction(chatId: string): WebhookEnvelope {
  return envelope('reaction.added', {
    chat_id: chatId,
    from_handle: chatHandle(randomUUID(), 'alice'),
    message_id: randomUUID(),
    part_index: 0,
    reaction_type: 'like',
    custom_emoji: null,
    is_from_me: false,
    reacted_at: '2026-01-01T00:00:00.000Z',
  }) as unknown as WebhookEnvelope;
}

describe('held reactions', () => {
  it('a turn sees the held reactions of its chat that arrived before it, the same set after a restart, and settles them', () => {
    const dir = path.join(tempDir(), 'state');
    const chatId = randomUUID();
    const before = reaction(chatId);
    const elsewhere = reaction(randomUUID());
    const message = inboundMessage({ chatId, senderId: randomUUID() }) as unknown as WebhookEnvelope;
    const after = reaction(chatId);
    let inbox = open(dir);
    inbox.acceptMany([
      { sequence: 1n, envelope: before },
      { sequence: 2n, envelope: elsewhere },
      { sequence: 3n, envelope: message },
      { sequence: 4n, envelope: after },
    ]);
    const ids = (rows: { eventId: string }[]) => rows.map((r) => r.eventId);
    inbox.hold(inbox.nextPending()?.eventId ?? '');
    inbox.hold(inbox.nextPending()?.eventId ?? '');
    const turn = inbox.nextPending();
    if (turn === null) throw new Error('no message row');
    inbox.markDispatched(turn.eventId);
    inbox.hold(inbox.nextPending()?.eventId ?? '');
    expect(ids(inbox.heldReactionsBefore(turn.rowid, chatId, 20))).toEqual([before.event_id]);
    expect(inbox.backlog()).toMatchObject({ held: 3, dispatched: 1, pending: 0 });
    inbox.close();

    // A crash: the message replays; held rows are not work and stay held, with the same set.
    inbox = open(dir);
    expect(inbox.status(turn.eventId)).toBe('pending');
    expect(inbox.status(before.event_id)).toBe('held');
    expect(ids(inbox.heldReactionsBefore(turn.rowid, chatId, 20))).toEqual([before.event_id]);
    expect(inbox.nextPending()?.eventId).toBe(turn.eventId);
    inbox.complete([turn.eventId, before.event_id]);
    expect(inbox.status(before.event_id)).toBe('completed');
    expect(inbox.status(after.event_id)).toBe('held');
    expect(inbox.status(elsewhere.event_id)).toBe('held');
    expect(inbox.heldReactionsBefore(turn.rowid, chatId, 20)).toEqual([]);
    inbox.close();
  });
});

describe('durable inbox', () => {
  it('opens in WAL mode with synchronous FULL, a 0700 directory and a 0600 database', () => {
    const dir = path.join(tempDir(), 'state');
    const inbox = open(dir);
    // The live connection: relaxed() transitions (NORMAL) must hand it back at FULL (2).
    const live = (inbox as unknown as { db: Database.Database }).db;
    expect(live.pragma('synchronous', { simple: true })).toBe(2);
    const e = env();
    inbox.accept(1n, e);
    expect(inbox.nextPending()?.eventId).toBe(e.event_id);
    expect(live.pragma('synchronous', { simple: true })).toBe(2);
    inbox.complete([e.event_id]);
    expect(live.pragma('synchronous', { simple: true })).toBe(2);
    expect(inbox.nextPending()).toBeNull();
    expect(live.pragma('synchronous', { simple: true })).toBe(2);
    inbox.close();
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, 'inbox.sqlite3')).mode & 0o777).toBe(0o600);
    const db = new Database(path.join(dir, 'inbox.sqlite3'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('forces an existing directory back to 0700', () => {
    const dir = path.join(tempDir(), 'state');
    fs.mkdirSync(dir, { mode: 0o755 });
    fs.chmodSync(dir, 0o755);
    open(dir).close();
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('accept commits the envelope once per event_id; a replay is a duplicate but its sequence is recorded', () => {
    const inbox = open(path.join(tempDir(), 'state'));
    const e = env();
    expect(inbox.accept(1n, e)).toBe('new');
    expect(inbox.accept(1n, e)).toBe('duplicate');
    expect(inbox.accept(2n, e)).toBe('duplicate');
    expect(inbox.hasDelivery(2n)).toBe(true);
    expect(inbox.backlog().pending).toBe(1);
    expect(() => inbox.accept(1n, env())).toThrow(InboxSequenceConflictError);
    inbox.close();
  });

  it('the checkpoint never moves backward, also across a FULL sync below it', () => {
    const inbox = open(path.join(tempDir(), 'state'));
    inbox.acceptMany([1n, 2n, 3n].map((sequence) => ({ sequence, envelope: env() })));
    expect(inbox.checkpoint()).toBe(3n);
    inbox.replaceSnapshot({ throughSequence: 2n, snapshotSha256: 'x', chatCount: 0, messageCount: 0 }, [], []);
    expect(inbox.checkpoint()).toBe(3n);
    inbox.replaceSnapshot({ throughSequence: 7n, snapshotSha256: 'y', chatCount: 0, messageCount: 0 }, [], []);
    expect(inbox.checkpoint()).toBe(7n);
    inbox.close();
  });

  it('rows move pending → processing → dispatched → completed; a retry returns to pending with the reason', () => {
    const inbox = open(path.join(tempDir(), 'state'));
    const a = env();
    const b = env();
    inbox.acceptMany([
      { sequence: 1n, envelope: a },
      { sequence: 2n, envelope: b },
    ]);
    const first = inbox.nextPending();
    expect(first?.eventId).toBe(a.event_id);
    expect(first?.attemptCount).toBe(1);
    inbox.markDispatched(a.event_id);
    expect(inbox.status(a.event_id)).toBe('dispatched');
    inbox.retry(a.event_id, 'x'.repeat(900), true);
    expect(inbox.status(a.event_id)).toBe('pending');
    const again = inbox.nextPending();
    expect(again?.eventId).toBe(a.event_id);
    expect(again?.attemptCount).toBe(2);
    expect(again?.failedTurns).toBe(1);
    expect(again?.lastError).toHaveLength(500);
    inbox.complete([a.event_id]);
    expect(inbox.status(a.event_id)).toBe('completed');
    expect(inbox.nextPending()?.eventId).toBe(b.event_id);
    inbox.ignore(b.event_id, 'not inbound');
    expect(inbox.nextPending()).toBeNull();
    inbox.close();
  });

  it('interrupted work (processing, dispatched) replays as pending on the next open', () => {
    const dir = path.join(tempDir(), 'state');
    const inbox = open(dir);
    const a = env();
    const b = env();
    inbox.acceptMany([
      { sequence: 1n, envelope: a },
      { sequence: 2n, envelope: b },
    ]);
    inbox.nextPending();
    inbox.nextPending();
    inbox.markDispatched(b.event_id);
    inbox.close();
    const reopened = open(dir);
    expect(reopened.backlog()).toMatchObject({ pending: 2, processing: 0, dispatched: 0 });
    reopened.close();
  });

  it('writes the account binding file (sorted keys, indent 2, newline, 0600) and never the token', () => {
    const dir = path.join(tempDir(), 'state');
    open(dir).close();
    const text = fs.readFileSync(path.join(dir, BINDING_FILE), 'utf8');
    const tfp = tokenFingerprint(TOKEN);
    expect(text).toBe(
      `${JSON.stringify({ account_fingerprint: accountFingerprint(ORIGIN, tfp), api_origin: ORIGIN, schema: 'relay-hermes-state-account/v1', token_fingerprint: tfp }, null, 2)}\n`,
    );
    expect(tfp).toHaveLength(71);
    expect(fs.statSync(path.join(dir, BINDING_FILE)).mode & 0o777).toBe(0o600);
    for (const f of fs.readdirSync(dir)) expect(fs.readFileSync(path.join(dir, f)).includes(TOKEN)).toBe(false);
  });

  it('token fingerprints are one-way hashes with the documented prefix', () => {
    expect(tokenFingerprint('t')).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(tokenFingerprint('t')).not.toBe(tokenFingerprint('u'));
  });

  it('a changed token or origin fails before any work is requeued', () => {
    const dir = path.join(tempDir(), 'state');
    const inbox = open(dir);
    const a = env();
    inbox.accept(1n, a);
    inbox.nextPending(); // processing when the process "died"
    inbox.close();
    expect(() => open(dir, 'agent-token-B')).toThrow(RelayStateBindingError);
    expect(() => open(dir, TOKEN, 'https://api.staging.relayapp.im')).toThrow(/separate RELAY_STATE_DIR/);
    // Nothing was requeued by the refused opens.
    const db = new Database(path.join(dir, 'inbox.sqlite3'), { readonly: true });
    expect(db.prepare('SELECT status FROM events').all()).toEqual([{ status: 'processing' }]);
    db.close();
  });

  it('a database row that disagrees with the binding file is refused', () => {
    const dir = path.join(tempDir(), 'state');
    open(dir).close();
    const db = new Database(path.join(dir, 'inbox.sqlite3'));
    db.prepare("UPDATE relay_state_account SET token_fingerprint = 'sha256:00'").run();
    db.close();
    expect(() => open(dir)).toThrow(RelayStateBindingError);
  });

  it('an inbox that predates account binding is refused, not adopted', () => {
    const dir = path.join(tempDir(), 'state');
    fs.mkdirSync(dir, { mode: 0o700 });
    const db = new Database(path.join(dir, 'inbox.sqlite3'));
    db.exec('CREATE TABLE events (event_id TEXT PRIMARY KEY)');
    db.close();
    expect(() => open(dir)).toThrow(/predates account binding/);
  });

  it('symlinked path components and a symlinked database are refused', () => {
    const root = tempDir();
    const real = path.join(root, 'real');
    fs.mkdirSync(real);
    fs.symlinkSync(real, path.join(root, 'link'));
    expect(() => open(path.join(root, 'link', 'state'))).toThrow(/symlinked path component/);
    const dir = path.join(root, 'state2');
    fs.mkdirSync(dir, { mode: 0o700 });
    fs.symlinkSync(path.join(root, 'elsewhere.sqlite3'), path.join(dir, 'inbox.sqlite3'));
    expect(() => open(dir)).toThrow(/symlink/);
    expect(fs.existsSync(path.join(root, 'elsewhere.sqlite3'))).toBe(false);
  });

  it('a replaced state directory is detected on the next access', () => {
    const root = tempDir();
    const dir = path.join(root, 'state');
    const inbox = open(dir);
    fs.renameSync(dir, path.join(root, 'moved'));
    fs.mkdirSync(dir, { mode: 0o700 });
    expect(() => inbox.assertBound()).toThrow(/replaced/);
    inbox.close();
  });

  it('a FULL-sync snapshot replaces the previous one atomically; a failure mid-transaction keeps the old one', () => {
    const inbox = open(path.join(tempDir(), 'state'));
    const chat = randomUUID();
    inbox.replaceSnapshot(
      { throughSequence: 5n, snapshotSha256: 'a', chatCount: 1, messageCount: 1 },
      [{ id: chat, json: '{"id":"c"}' }],
      [{ id: randomUUID(), chatId: chat, json: '{"m":1}' }],
    );
    expect(() =>
      inbox.replaceSnapshot({ throughSequence: 9n, snapshotSha256: 'b', chatCount: 0, messageCount: 0 }, [], [], () => {
        throw new Error('crash inside the transaction');
      }),
    ).toThrow(/crash inside/);
    expect(inbox.fullSyncState()).toEqual({ throughSequence: 5n, snapshotSha256: 'a', chatCount: 1, messageCount: 1 });
    expect(inbox.snapshotChats()).toEqual([{ id: 'c' }]);
    expect(inbox.snapshotMessages()).toEqual([{ m: 1 }]);
    expect(inbox.checkpoint()).toBe(5n);
    inbox.close();
  });
});
