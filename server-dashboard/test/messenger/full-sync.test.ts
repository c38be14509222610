import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { canonicalJson, fetchSnapshot, snapshotSha256 } from '../../src/messenger/full-sync.js';
import { Inbox } from '../../src/messenger/inbox.js';
import { RelayApi } from '../../src/messenger/relay-api.js';
import { RelayFullSyncError } from '../../src/messenger/errors.js';
import { inboundMessage } from './fakes/fake-relay.js';
import { RELAY_TOKEN, startFakes, waitFor, type Fakes } from './harness.js';
import { spawnConnector, WORKSPACE } from './process.js';

let fakes: Fakes;

function chat(id: string, isGroup = false): Record<string, unknown> {
  return {
    id,
    display_name: null,
    handles: [],
    is_group: isGroup,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
  };
}

function message(chatId: string, n: number, fromMe = false): Record<string, unknown> {
  return {
    id: randomUUID(),
    chat_id: chatId,
    is_from_me: fromMe,
    is_system_message: false,
    delivery_status: 'delivered',
    created_at: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
    updated_at: '2026-01-01T00:00:00.000Z',
    parts: [{ type: 'text', value: `history ${n}`, reactions: null }],
  };
}

function seedHistory(chats: number, perChat: number): void {
  for (let c = 0; c < chats; c++) {
    const id = randomUUID();
    fakes.relay.chats.set(id, chat(id, c % 2 === 1));
    fakes.relay.history.set(
      id,
      Array.from({ length: perChat }, (_, i) => message(id, i, i % 3 === 0)),
    );
  }
}

beforeEach(async () => {
  fakes = await startFakes();
});

afterEach(async () => {
  await fakes.close();
});

describe('FULL sync', () => {
  it('pages every chat and message (cursors, limit 100) and hashes a canonical snapshot', async () => {
    fakes.relay.listChatsPageSize = 2;
    seedHistory(5, 130);
    const api = new RelayApi({ origin: fakes.relay.url, agentToken: RELAY_TOKEN });
    const snap = await fetchSnapshot(api);
    expect(snap.chats).toHaveLength(5);
    expect(snap.messages).toHaveLength(650);
    const listCalls = fakes.relay.requests.filter((r) => r.operationId === 'listChats');
    expect(listCalls).toHaveLength(3);
    expect(listCalls.every((r) => r.path === '/v1/chats')).toBe(true);
    expect(fakes.relay.requests.filter((r) => r.operationId === 'getMessages')).toHaveLength(10);
    expect(fakes.relay.contractViolations).toEqual([]);
    expect(snapshotSha256(snap)).toMatch(/^[0-9a-f]{64}$/);
    // Order of input does not change the hash.
    expect(snapshotSha256({ chats: [...snap.chats].reverse(), messages: [...snap.messages].reverse() })).toBe(
      snapshotSha256(snap),
    );
  });

  it('canonical JSON sorts keys at every level, is compact, keeps non-ASCII and refuses NaN', () => {
    expect(canonicalJson({ b: [{ d: 1, c: 'é' }], a: null })).toBe('{"a":null,"b":[{"c":"é","d":1}]}');
    expect(() => canonicalJson({ x: Number.NaN })).toThrow(RelayFullSyncError);
  });

  it.each([
    [
      'a duplicate chat',
      () => {
        const id = randomUUID();
        fakes.relay.chats.set(id, chat(id));
        fakes.relay.chats.set(`${id}-dup`, chat(id));
      },
      /duplicate chat/,
    ],
    [
      'a message of another chat',
      () => {
        const id = randomUUID();
        fakes.relay.chats.set(id, chat(id));
        fakes.relay.history.set(id, [message(randomUUID(), 1)]);
      },
      /another chat/,
    ],
    [
      'a chat without boolean is_group',
      () => {
        const id = randomUUID();
        fakes.relay.chats.set(id, { ...chat(id), is_group: 'no' });
      },
      /is_group/,
    ],
  ])('%s fails validation', async (_what, seed, message) => {
    seed();
    const api = new RelayApi({ origin: fakes.relay.url, agentToken: RELAY_TOKEN });
    await expect(fetchSnapshot(api)).rejects.toThrow(message);
  });

  it('the connector commits the snapshot, sends full_sync_complete after it, and history never becomes turns', async () => {
    seedHistory(3, 20);
    for (let i = 0; i < 10; i++)
      fakes.relay.events.push(inboundMessage({ chatId: randomUUID(), senderId: randomUUID() }));
    fakes.relay.ackedThrough = 0n;
    fakes.relay.retainedAfter = 10n;
    const p = spawnConnector('start', fakes.env());
    try {
      await waitFor(() => fakes.relay.fullSyncCompletions.length === 1, 60_000, 'full sync');
      const after = inboundMessage({ chatId: randomUUID(), senderId: randomUUID(), text: 'new after sync' });
      fakes.relay.push(after);
      await waitFor(() => fakes.relay.messages.size === 1, 30_000, 'reply to the new message');
      expect(fakes.relay.fullSyncCompletions).toEqual([10n]);
      expect(fakes.relay.acks.map((a) => a.through)).toEqual([11n]);
      expect(fakes.hermes.createdRuns.map((r) => r.input)).toEqual(['new after sync']);
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    const inbox = Inbox.open({
      stateDir: fakes.stateDir,
      apiOrigin: fakes.relay.url,
      agentToken: RELAY_TOKEN,
      readOnly: true,
    });
    expect(inbox.fullSyncState()).toMatchObject({ throughSequence: 10n, chatCount: 3, messageCount: 60 });
    expect(inbox.checkpoint()).toBe(11n);
    inbox.close();
  });

  it('a crash mid-snapshot (kill -9 while paging, and inside the SQLite transaction) leaves the previous state intact', async () => {
    // 1. A first, complete FULL sync.
    seedHistory(2, 5);
    fakes.relay.events.push(inboundMessage({ chatId: randomUUID(), senderId: randomUUID() }));
    fakes.relay.retainedAfter = 1n;
    let p = spawnConnector('start', fakes.env());
    await waitFor(() => fakes.relay.fullSyncCompletions.length === 1, 60_000, 'first full sync');
    p.child.kill('SIGTERM');
    await p.exited;
    const before = Inbox.open({
      stateDir: fakes.stateDir,
      apiOrigin: fakes.relay.url,
      agentToken: RELAY_TOKEN,
      readOnly: true,
    });
    const stateBefore = before.fullSyncState();
    const chatsBefore = before.snapshotChats();
    before.close();
    expect(stateBefore).toMatchObject({ throughSequence: 1n, chatCount: 2, messageCount: 10 });

    // 2. Relay demands another FULL sync; the process is killed while it pages.
    seedHistory(4, 5);
    fakes.relay.ackedThrough = 0n;
    fakes.relay.retainedAfter = 1n;
    fakes.relay.listMessagesDelayMs = 200;
    p = spawnConnector('start', fakes.env());
    await waitFor(
      () => fakes.relay.requests.filter((r) => r.operationId === 'getMessages').length >= 4,
      60_000,
      'paging',
    );
    p.child.kill('SIGKILL');
    await p.exited;

    // 3. A helper process dies by SIGKILL inside the snapshot transaction itself.
    const helper = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(WORKSPACE, 'test/messenger/fixtures/snapshot-crash.ts'),
        fakes.stateDir,
        fakes.relay.url,
      ],
      {
        cwd: WORKSPACE,
        env: { ...process.env, RELAY_AGENT_TOKEN: RELAY_TOKEN },
        stdio: 'ignore',
      },
    );
    const signal = await new Promise<string | null>((r) => helper.on('exit', (_c, s) => r(s)));
    expect(signal).toBe('SIGKILL');

    const after = Inbox.open({
      stateDir: fakes.stateDir,
      apiOrigin: fakes.relay.url,
      agentToken: RELAY_TOKEN,
      readOnly: true,
    });
    expect(after.fullSyncState()).toEqual(stateBefore);
    expect(after.snapshotChats()).toEqual(chatsBefore);
    expect(after.snapshotMessages()).toHaveLength(10);
    after.close();
    expect(fakes.relay.fullSyncCompletions).toEqual([1n]);
  });
});
