/**
 * `display.busy_input_mode` (issue 23, item 7), end to end: a message arriving while the chat's turn
 * runs interrupts it (Hermes' default), is steered into it, or is queued behind it — the real connector
 * and Hermes API-server backend against the fake Relay and the fake Hermes API server.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { MessengerConnector } from '../../src/messenger/connector.js';
import { silentLogger } from '../../src/messenger/clock.js';
import { readMessengerConfig } from '../../src/messenger/config.js';
import { HermesRunsBackend } from '../../src/messenger/hermes-runs-backend.js';
import { loadProfileSettings } from '../../src/messenger/profile-settings.js';
import type { RunScript } from './fakes/fake-hermes.js';
import { inboundMessage } from './fakes/fake-relay.js';
import { HERMES_KEY, startFakes, tempDir, waitFor, type Fakes } from './harness.js';

let fakes: Fakes | null = null;
let connector: MessengerConnector | null = null;
/** Lets the test end a `slow` run that is not stopped. */
let release: () => void = () => {};

afterEach(async () => {
  release();
  await connector?.stop();
  connector = null;
  await fakes?.close();
  fakes = null;
});

/**
 * `slow …` runs until stopped (then cancelled), steered (then completes with what it was told), or
 * released by the test; anything else completes at once.
 */
function script(options: { pendingSteer?: boolean } = {}): RunScript {
  return async (run, ctl) => {
    if (!run.input.startsWith('slow')) return ctl.emit('run.completed', { output: `done: ${run.input}` });
    ctl.emit('message.delta', { delta: 'working' });
    const released = new Promise<'released'>((resolve) => (release = () => resolve('released')));
    const outcome = await Promise.race([ctl.stopRequested().then(() => 'stopped' as const), ctl.nextSteer(), released]);
    if (outcome === 'stopped') return ctl.emit('run.cancelled', {});
    if (outcome === 'released') return ctl.emit('run.completed', { output: `done: ${run.input}` });
    if (options.pendingSteer)
      return ctl.emit('run.completed', { output: `done: ${run.input}`, pending_steer: outcome });
    ctl.emit('run.completed', { output: `done: ${run.input}, and ${outcome}` });
  };
}

async function start(mode: string | null, options: { pendingSteer?: boolean } = {}): Promise<Fakes> {
  const started = await startFakes({ script: script(options) });
  fakes = started;
  const agent = new HermesRunsBackend({ baseUrl: started.hermes.url, apiKey: HERMES_KEY });
  const config = started.config(mode === null ? {} : { HERMES_GATEWAY_BUSY_INPUT_MODE: mode });
  connector = MessengerConnector.start({ config, agent, log: silentLogger });
  return started;
}

function send(chatId: string, senderId: string, text: string): string {
  const ev = inboundMessage({ chatId, senderId, text });
  fakes?.relay.push(ev);
  return String(ev['event_id']);
}

function status(eventId: string) {
  return connector?.inbox.status(eventId);
}

function completed(...eventIds: string[]): Promise<boolean> {
  return waitFor(() => eventIds.every((id) => status(id) === 'completed'), 30_000, `${eventIds.join(', ')} completed`);
}

function repliesText(): string[] {
  return [...(fakes?.relay.messages.values() ?? [])].map((m) => {
    const message = (m.body as { message?: { parts?: { value?: unknown }[] } }).message;
    return String(message?.parts?.[0]?.value ?? '');
  });
}

describe('a message arriving mid-turn', () => {
  it('interrupts the running turn by default (Hermes): the run is stopped, the new one answers, both rows settle', async () => {
    const f = await start(null);
    const chatId = randomUUID();
    const person = randomUUID();
    const first = send(chatId, person, 'slow essay about tides');
    const firstRun = await waitFor(() => f.hermes.createdRuns[0], 30_000, 'the first run');
    const second = send(chatId, person, 'actually, make it about wind');
    await completed(first, second);
    expect(firstRun.stopped).toBe(true);
    expect(f.hermes.createdRuns.map((r) => r.input)).toEqual([
      'slow essay about tides',
      'actually, make it about wind',
    ]);
    // One session: the interrupted words stay in Hermes' history for the turn that follows.
    expect(new Set(f.hermes.createdRuns.map((r) => r.sessionId))).toEqual(new Set([`relayapp:${chatId}`]));
    expect(repliesText()).toEqual(['done: actually, make it about wind']);
  });

  it('steer folds it into the running turn: one run, both rows settle with it', async () => {
    const f = await start('steer');
    const chatId = randomUUID();
    const person = randomUUID();
    const first = send(chatId, person, 'slow summary of the logs');
    await waitFor(() => f.hermes.createdRuns[0], 30_000, 'the first run');
    const second = send(chatId, person, 'only the errors please');
    await completed(first, second);
    expect(f.hermes.createdRuns).toHaveLength(1);
    expect(f.hermes.createdRuns[0]?.steers).toEqual([{ input: 'only the errors please' }]);
    expect(repliesText()).toEqual(['done: slow summary of the logs, and only the errors please']);
  });

  it('a message arriving while the run is still being created waits for it, and is steered into it', async () => {
    const f = await start('steer');
    let answer: () => void = () => undefined;
    f.hermes.beforeRunAnswer = () => new Promise<void>((resolve) => (answer = resolve));
    const chatId = randomUUID();
    const person = randomUUID();
    const first = send(chatId, person, 'slow summary of the logs');
    await waitFor(() => f.hermes.createdRuns[0], 30_000, 'the first run');
    // Hermes has the run but has not answered with its id: the chat is busy all the same.
    const second = send(chatId, person, 'only the errors please');
    await waitFor(() => status(second) === 'processing', 30_000, 'the second row taken');
    answer();
    await completed(first, second);
    expect(f.hermes.createdRuns).toHaveLength(1);
    expect(f.hermes.createdRuns[0]?.steers).toEqual([{ input: 'only the errors please' }]);
  });

  it('steered words the run never delivered (pending_steer) are replayed as a turn of their own', async () => {
    const f = await start('steer', { pendingSteer: true });
    const chatId = randomUUID();
    const person = randomUUID();
    const first = send(chatId, person, 'slow build');
    await waitFor(() => f.hermes.createdRuns[0], 30_000, 'the first run');
    const second = send(chatId, person, 'and run the tests');
    await completed(first, second);
    expect(f.hermes.createdRuns.map((r) => r.input)).toEqual(['slow build', 'and run the tests']);
  });

  it('queue leaves it waiting behind the running turn, which is never stopped', async () => {
    const f = await start('queue');
    const chatId = randomUUID();
    const person = randomUUID();
    const first = send(chatId, person, 'slow report');
    const firstRun = await waitFor(() => f.hermes.createdRuns[0], 30_000, 'the first run');
    const second = send(chatId, person, 'and a chart');
    // Taken and marked Read at intake, then waiting: nothing reaches Hermes until the turn ends.
    await waitFor(() => status(second) === 'processing', 30_000, 'the second row taken');
    expect(f.hermes.createdRuns).toHaveLength(1);
    release();
    await completed(first, second);
    expect(firstRun.stopped).toBe(false);
    expect(f.hermes.createdRuns.map((r) => r.input)).toEqual(['slow report', 'and a chart']);
  });

  it("is read from the profile's display.busy_input_mode, and Hermes' environment variable wins", () => {
    const home = tempDir();
    fs.writeFileSync(path.join(home, 'config.yaml'), 'display:\n  busy_input_mode: queue\n');
    const base = { RELAY_AGENT_TOKEN: 't' };
    const fromFile = loadProfileSettings(base, home);
    expect(readMessengerConfig(fromFile.env, home, fromFile.extra, fromFile.display).busyInputMode).toBe('queue');
    const fromEnv = loadProfileSettings({ ...base, HERMES_GATEWAY_BUSY_INPUT_MODE: 'steer' }, home);
    expect(readMessengerConfig(fromEnv.env, home, fromEnv.extra, fromEnv.display).busyInputMode).toBe('steer');
    expect(readMessengerConfig(base, home).busyInputMode).toBe('interrupt');
    expect(readMessengerConfig({ ...base, HERMES_GATEWAY_BUSY_INPUT_MODE: 'bogus' }, home).busyInputMode).toBe(
      'interrupt',
    );
  });
});
