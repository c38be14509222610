import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Inbox } from '../../src/messenger/inbox.js';
import { inboundMessage } from './fakes/fake-relay.js';
import { RELAY_TOKEN, startFakes, tempDir, waitFor, type Fakes } from './harness.js';
import { runCli, spawnConnector } from './process.js';

let fakes: Fakes;

beforeEach(async () => {
  fakes = await startFakes();
});

afterEach(async () => {
  await fakes.close();
});

describe('messenger CLI', () => {
  it('status shows the configuration and inbox but never the token; backlog lists waiting events', async () => {
    const inbox = Inbox.open({ stateDir: fakes.stateDir, apiOrigin: fakes.relay.url, agentToken: RELAY_TOKEN });
    const ev = inboundMessage({ chatId: randomUUID(), senderId: randomUUID() });
    inbox.accept(1n, ev as never);
    inbox.close();
    const status = await runCli('status', fakes.env());
    expect(status.code).toBe(0);
    expect(status.output).toContain(`api origin:        ${fakes.relay.url}`);
    expect(status.output).toContain('1 pending');
    expect(status.output).toContain('checkpoint:        1');
    expect(status.output).not.toContain(RELAY_TOKEN);
    const backlog = await runCli('backlog', fakes.env());
    expect(backlog.code).toBe(0);
    expect(backlog.output).toContain(String(ev['event_id']));
    expect(backlog.output).toContain('message.received');
    expect(backlog.output).not.toContain(RELAY_TOKEN);
    // Neither command touched Relay.
    expect(fakes.relay.upgrades).toHaveLength(0);
    expect(fakes.relay.requests).toHaveLength(0);
  });

  it('reads the token and origin from the profile .env the Relay CLI writes', async () => {
    const home = tempDir();
    const profile = path.join(home, 'profiles', 'work');
    fs.mkdirSync(profile, { recursive: true });
    fs.writeFileSync(
      path.join(profile, '.env'),
      `RELAY_AGENT_TOKEN=${RELAY_TOKEN}\nRELAY_BASE_URL=${fakes.relay.url}\n`,
    );
    const out = await runCli('status', { HERMES_HOME: home, HERMES_PROFILE: 'work' });
    expect(out.output).toContain(`state dir:         ${path.join(profile, 'relay')}`);
    expect(out.output).not.toContain(RELAY_TOKEN);
  });

  it("a secondary profile's own .env is authoritative: the primary's exported token and origin never bind it", async () => {
    const home = tempDir();
    const profile = path.join(home, 'profiles', 'work');
    fs.mkdirSync(profile, { recursive: true });
    const primary = {
      RELAY_AGENT_TOKEN: 'primary-account-token-0123456789',
      RELAY_BASE_URL: 'https://primary.example',
    };
    // The profile has no token of its own: the primary's exported one must not fill the gap.
    fs.writeFileSync(path.join(profile, '.env'), `RELAY_BASE_URL=${fakes.relay.url}\n`);
    const missing = await runCli('status', { HERMES_HOME: home, HERMES_PROFILE: 'work', ...primary });
    expect(missing.code).toBe(78);
    expect(missing.output).toContain('RELAY_AGENT_TOKEN is required');
    expect(missing.output).not.toContain(primary.RELAY_AGENT_TOKEN);
    // With its own token, its own origin wins over the exported one.
    fs.writeFileSync(
      path.join(profile, '.env'),
      `RELAY_AGENT_TOKEN=${RELAY_TOKEN}\nRELAY_BASE_URL=${fakes.relay.url}\n`,
    );
    const own = await runCli('status', { HERMES_HOME: home, HERMES_PROFILE: 'work', ...primary });
    expect(own.code).not.toBe(78);
    expect(own.output).toContain(`api origin:        ${fakes.relay.url}`);
    expect(own.output).not.toContain('primary.example');
    // The primary profile itself still reads the process environment first.
    const root = await runCli('status', { HERMES_HOME: home, ...primary, RELAY_BASE_URL: fakes.relay.url });
    expect(root.code).not.toBe(78);
    expect(root.output).toContain(`api origin:        ${fakes.relay.url}`);
  });

  it('an invalid RELAY_BASE_URL fails closed before anything starts', async () => {
    const out = await runCli('start', fakes.env({ RELAY_BASE_URL: 'http://relay.example.com' }));
    expect(out.code).toBe(78);
    expect(out.output).toMatch(/RELAY_BASE_URL: .*https/);
    expect(fakes.relay.upgrades).toHaveLength(0);
  });

  it('a token change with the old state directory fails before any work', async () => {
    // Leave work behind with the first token: a pending event and one that was mid-turn.
    const inbox = Inbox.open({ stateDir: fakes.stateDir, apiOrigin: fakes.relay.url, agentToken: RELAY_TOKEN });
    inbox.acceptMany([
      { sequence: 1n, envelope: inboundMessage({ chatId: randomUUID(), senderId: randomUUID() }) as never },
      { sequence: 2n, envelope: inboundMessage({ chatId: randomUUID(), senderId: randomUUID() }) as never },
    ]);
    inbox.nextPending();
    inbox.close();
    const out = await runCli('start', fakes.env({ RELAY_AGENT_TOKEN: 'a-different-agent-token' }));
    expect(out.code).toBe(2);
    expect(out.output).toContain('relay_state_account_mismatch');
    expect(out.output).toContain('use a separate RELAY_STATE_DIR');
    expect(out.output).not.toContain('a-different-agent-token');
    // No WebSocket, no REST call, no Hermes run, and the interrupted row was not requeued.
    expect(fakes.relay.upgrades).toHaveLength(0);
    expect(fakes.relay.requests).toHaveLength(0);
    expect(fakes.hermes.createdRuns).toHaveLength(0);
    const check = Inbox.open({
      stateDir: fakes.stateDir,
      apiOrigin: fakes.relay.url,
      agentToken: RELAY_TOKEN,
      readOnly: true,
    });
    expect(check.backlog()).toMatchObject({ pending: 1, processing: 1 });
    check.close();
    const status = await runCli('status', fakes.env({ RELAY_AGENT_TOKEN: 'a-different-agent-token' }));
    expect(status.code).toBe(3);
    expect(status.output).toContain('bound to a different API origin or Agent Token');
  });

  it('SIGTERM stops a running connector cleanly with exit code 0', async () => {
    const p = spawnConnector('start', fakes.env());
    await waitFor(() => fakes.relay.connections.length === 1, 60_000, 'connected');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });
});
