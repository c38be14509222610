/**
 * Slash commands on Relay (issue 23, item 6), end to end: the real connector with the real Hermes
 * API-server backend against the fake Relay server and the fake Hermes API server.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { MessengerConnector } from '../../src/messenger/connector.js';
import { silentLogger } from '../../src/messenger/clock.js';
import { COMMAND_TEXT } from '../../src/messenger/commands.js';
import { HermesRunsBackend } from '../../src/messenger/hermes-runs-backend.js';
import type { RunScript } from './fakes/fake-hermes.js';
import { inboundMessage } from './fakes/fake-relay.js';
import { HERMES_KEY, startFakes, waitFor, type Fakes } from './harness.js';

type Json = Record<string, unknown>;

let fakes: Fakes | null = null;
let connector: MessengerConnector | null = null;

afterEach(async () => {
  await connector?.stop();
  connector = null;
  await fakes?.close();
  fakes = null;
});

/** A run that says nothing until it is stopped, then ends cancelled, as Hermes' stop does. */
const runsUntilStopped: RunScript = async (run, ctl) => {
  if (run.input.startsWith('echo ') || run.input.startsWith('/')) {
    return ctl.emit('run.completed', { output: run.input.replace(/^echo /, '') });
  }
  ctl.emit('message.delta', { delta: 'working' });
  await ctl.stopRequested();
  ctl.emit('run.cancelled', {});
};

async function start(env: Record<string, string> = {}, script: RunScript = runsUntilStopped): Promise<Fakes> {
  const started = await startFakes({ script });
  fakes = started;
  const agent = new HermesRunsBackend({ baseUrl: started.hermes.url, apiKey: HERMES_KEY });
  connector = MessengerConnector.start({ config: started.config(env), agent, log: silentLogger });
  return started;
}

function send(chatId: string, senderId: string, text: string): string {
  const ev = inboundMessage({ chatId, senderId, text });
  fakes?.relay.push(ev);
  return String(ev['event_id']);
}

function replyTo(eventId: string): Promise<string> {
  return waitFor(
    () => {
      const sent = [...(fakes?.relay.messages.values() ?? [])].find((m) => m.idempotencyKey === `reply-${eventId}-0`);
      const message = (sent?.body as Json | undefined)?.['message'] as { parts?: Json[] } | undefined;
      const value = message?.parts?.[0]?.['value'];
      return typeof value === 'string' ? value : undefined;
    },
    30_000,
    `the reply to ${eventId}`,
  );
}

function settled(eventId: string): Promise<string> {
  return waitFor(
    () => {
      const status = connector?.inbox.status(eventId);
      return status === 'completed' || status === 'ignored' ? status : null;
    },
    30_000,
    `${eventId} settled`,
  );
}

describe('slash commands', () => {
  it('/stop stops the running turn through Hermes; the stopped turn is settled, not retried', async () => {
    const f = await start();
    const chatId = randomUUID();
    const person = randomUUID();
    const turnId = send(chatId, person, 'write me a very long essay');
    const run = await waitFor(() => f.hermes.createdRuns[0], 30_000, 'the run');
    const stopId = send(chatId, person, '/stop');
    expect(await replyTo(stopId)).toBe(COMMAND_TEXT.stopping);
    expect(await settled(turnId)).toBe('completed');
    expect(await settled(stopId)).toBe('completed');
    expect(run.stopped).toBe(true);
    // One run only: the cancelled turn was not started again, and /stop never reached Hermes as words.
    expect(f.hermes.createdRuns.map((r) => r.input)).toEqual(['write me a very long essay']);
    const idle = send(chatId, person, '/stop');
    expect(await replyTo(idle)).toBe(COMMAND_TEXT.nothingRunning);
  });

  it('/new moves the chat to a new Hermes session; /status names it; other commands go to Hermes', async () => {
    const f = await start();
    const chatId = randomUUID();
    const person = randomUUID();
    await settled(send(chatId, person, 'echo first'));
    const status = send(chatId, person, '/status');
    expect(await replyTo(status)).toBe(`Session: relayapp:${chatId}\nTurn: idle`);
    const fresh = send(chatId, person, '/new');
    expect(await replyTo(fresh)).toBe(COMMAND_TEXT.newSession);
    await settled(send(chatId, person, 'echo second'));
    const model = send(chatId, person, '/model gpt-5');
    await waitFor(() => f.hermes.createdRuns.length === 3, 30_000, 'the /model run');
    expect(f.hermes.createdRuns.map((r) => [r.input, r.sessionId])).toEqual([
      ['echo first', `relayapp:${chatId}`],
      ['echo second', `relayapp:${chatId}:1`],
      ['/model gpt-5', `relayapp:${chatId}:1`],
    ]);
    expect(connector?.inbox.status(model)).not.toBe('ignored');
  });

  it('with allow_admin_from, only admins run commands, beside what user_allowed_commands lets anyone run', async () => {
    const admin = randomUUID();
    const f = await start({ RELAY_ALLOW_ADMIN_FROM: admin, RELAY_USER_ALLOWED_COMMANDS: 'status,/new' });
    const chatId = randomUUID();
    const person = randomUUID();
    const refused = send(chatId, person, '/model gpt-5');
    expect(await replyTo(refused)).toBe(COMMAND_TEXT.refused('model'));
    expect(await settled(refused)).toBe('ignored');
    const allowed = send(chatId, person, '/status');
    expect(await replyTo(allowed)).toContain('Session: ');
    const turnId = send(chatId, person, 'a long job');
    await waitFor(() => f.hermes.createdRuns[0], 30_000, 'the run');
    const personStop = send(chatId, person, '/stop');
    expect(await replyTo(personStop)).toBe(COMMAND_TEXT.refused('stop'));
    expect(f.hermes.createdRuns[0]?.stopped).toBe(false);
    const adminStop = send(chatId, admin, '/stop');
    expect(await replyTo(adminStop)).toBe(COMMAND_TEXT.stopping);
    expect(await settled(turnId)).toBe('completed');
    // Ordinary words are never a command, whoever sends them.
    expect(f.hermes.createdRuns.map((r) => r.input)).toEqual(['a long job']);
  });
});
