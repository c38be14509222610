/**
 * The pending-change nudge against a real relay process (server-relay in APNs capture mode): every
 * write posts a phone.changes event through the profile's pairing, an alert for a change the user
 * approves and a silent background push for an add the user lets Hermes make without asking (the
 * phone's sharing state says which); sealed end to end when the pairing has a key, so the relay sees
 * no title. A relay that is gone loses nothing: the phone finds the change on its next exchange.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PHONE_LABEL } from '@conduit/contracts/dashboard/phone';
import type { Host } from '../../src/app.js';
import { phoneFeature } from '../../src/features/phone/index.js';
import { readOrCreateMcpToken } from '../../src/mcp/mcp-token.js';
import { nodeKeyedId, nodeKeys, nodeOpen, type NodeEnvelope } from '../crypto/independent-e2e.js';
import { testConfig } from '../support/config.js';
import { startHost } from '../support/host.js';
import { callToolAsHermes } from '../support/mcp-client.js';
import { provisionPushKey } from '../support/pairing.js';
import { ExchangingPhone } from '../support/phone-exchange-stand-in.js';
import { RealRelay } from '../support/real-relay.js';

let relay: RealRelay;
let dataDir: string;
let root: string;
let host: Host & { url: string };
let mcpToken: string;
const capturePath = () => join(dataDir, 'capture.jsonl');
const DAY = Math.floor(Date.now() / 1000) - (Math.floor(Date.now() / 1000) % 86_400);
const TOMORROW = new Date((DAY + 86_400) * 1000).toISOString().slice(0, 10);

const sharing = (addWithoutAsking: boolean) => ({
  calendars: {
    on: true,
    modes: { 'cal-home': 'read', 'cal-family': 'read' },
    add_without_asking: addWithoutAsking,
  },
  reminders: { on: true, modes: { 'list-todo': 'read', 'list-shared': 'read' }, add_without_asking: addWithoutAsking },
  alarms: { on: true, add_without_asking: addWithoutAsking },
  past_days: 1,
  future_days: 14,
  focus: false,
  status: false,
});

const batch = (addWithoutAsking: boolean) => ({
  v: 1,
  sharing: sharing(addWithoutAsking),
  calendars: [
    { id: 'cal-home', title: 'Home' },
    { id: 'cal-family', title: 'Family', shared: true },
  ],
  events: [
    {
      id: 'dentist',
      calendar_id: 'cal-home',
      title: 'Dentist',
      start: DAY + 86_400 + 36_000,
      end: DAY + 86_400 + 39_600,
    },
  ],
  lists: [
    { id: 'list-todo', title: 'To do' },
    { id: 'list-shared', title: 'Groceries', shared: true },
  ],
  reminders: [{ id: 'call-mum', list_id: 'list-todo', title: 'Call mum' }],
  alarms: [{ id: 'alarm-1', kind: 'alarm', label: 'Wake up', time: '06:30', days: ['mon', 'tue'] }],
});

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'conduit-phone-changes-relay-'));
  root = join(dataDir, 'hermes');
  await mkdir(join(root, 'profiles', 'work'), { recursive: true });
  relay = await RealRelay.start(dataDir);
  host = await startHost(testConfig(root), { features: [phoneFeature] });
  mcpToken = await readOrCreateMcpToken(join(root, 'conduit-host'));
});

afterAll(async () => {
  await host?.app.close();
  await relay?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

function captured(): { notification: Record<string, unknown> & { payload: Record<string, unknown> } }[] {
  if (!existsSync(capturePath())) return [];
  return readFileSync(capturePath(), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map(
      (line) => JSON.parse(line) as { notification: Record<string, unknown> & { payload: Record<string, unknown> } },
    );
}

type Written = { change: { id: string; asks_user: boolean }; phone_notified: boolean; nudge?: string };

async function write(profile: string, tool: string, args: Record<string, unknown>): Promise<Written> {
  const from = { profile, session: 'chat-relay', turn: 't-relay', toolCall: 'tc-relay' };
  const { isError, text } = await callToolAsHermes(host, mcpToken, tool, args, from);
  expect(isError, text).toBeFalsy();
  return JSON.parse(text) as Written;
}

/** The one push a write caused. */
async function pushOf(profile: string, tool: string, args: Record<string, unknown>) {
  const before = captured().length;
  const written = await write(profile, tool, args);
  expect(written.phone_notified).toBe(true);
  const pushes = captured().slice(before);
  expect(pushes).toHaveLength(1);
  return { written, push: pushes[0]?.notification ?? { payload: {} } };
}

describe('the phone.changes nudge through the real relay', () => {
  it('is an alert for what the user approves and a background push for an add allowed without asking', async () => {
    await relay.pair(root);
    const phone = new ExchangingPhone(host.url, 'phone', PHONE_LABEL, 'iphone-relay');
    await phone.agree();
    expect((await phone.send(batch(true))).status).toBe(200);

    const silent = await pushOf('default', 'conduit_calendar', {
      action: 'add_event',
      calendar: 'cal-home',
      title: 'Gym',
      start: `${TOMORROW}T18:00`,
    });
    expect(silent.written.change.asks_user).toBe(false);
    expect(silent.push).toMatchObject({
      payload: { aps: { 'content-available': 1 }, conduit: { type: 'phone.changes', mode: 'background' } },
      pushType: 'background',
      priority: 5,
    });
    // Nothing a person could read rides a background push.
    expect(JSON.stringify(silent.push)).not.toContain('Gym');

    const cases: [string, Record<string, unknown>, 'alert' | 'background'][] = [
      // Adds to shared calendars and lists always ask.
      ['conduit_calendar', { action: 'add_event', calendar: 'cal-family', title: 'Party', start: TOMORROW }, 'alert'],
      ['conduit_calendar', { action: 'add_reminder', list: 'list-todo', title: 'Buy stamps' }, 'background'],
      ['conduit_calendar', { action: 'add_reminder', list: 'list-shared', title: 'Milk' }, 'alert'],
      // Updates, deletes, completions and cancels always ask.
      ['conduit_calendar', { action: 'update_event', event: 'dentist', title: 'Dentist (Dr Lee)' }, 'alert'],
      ['conduit_calendar', { action: 'delete_event', event: 'dentist' }, 'alert'],
      ['conduit_calendar', { action: 'complete_reminder', reminder: 'call-mum' }, 'alert'],
      ['conduit_phone', { action: 'set_timer', seconds: 600, label: 'Pasta' }, 'background'],
      ['conduit_phone', { action: 'set_alarm', time: '07:00', days: ['sat'] }, 'background'],
      ['conduit_phone', { action: 'cancel_alarm', alarm: 'alarm-1' }, 'alert'],
    ];
    for (const [tool, args, mode] of cases) {
      const { written, push } = await pushOf('default', tool, args);
      expect([args, written.change.asks_user, (push.payload.conduit as { mode: string }).mode]).toEqual([
        args,
        mode === 'alert',
        mode,
      ]);
      if (mode === 'alert') {
        expect(push.payload).toMatchObject({ aps: { alert: { title: expect.any(String) } } });
        expect(push.pushType).toBeUndefined();
      }
    }
    // Without "add without asking", every add asks.
    expect((await phone.send(batch(false))).status).toBe(200);
    const asked = await pushOf('default', 'conduit_calendar', {
      action: 'add_event',
      calendar: 'cal-home',
      title: 'Yoga',
      start: TOMORROW,
    });
    expect([asked.written.change.asks_user, (asked.push.payload.conduit as { mode: string }).mode]).toEqual([
      true,
      'alert',
    ]);
    const timer = await pushOf('default', 'conduit_phone', { action: 'set_timer', seconds: 60 });
    expect((timer.push.payload.conduit as { mode: string }).mode).toBe('alert');

    // The phone gets what the pushes announced, with the same ask.
    const handed = await phone.exchange();
    expect(handed.changes.map((change) => change.ask)).toEqual([
      false,
      true,
      false,
      true,
      true,
      true,
      true,
      false,
      false,
      true,
      true,
      true,
    ]);
    expect(handed.changes[0]?.id).toBe(silent.written.change.id);
  });

  it('is sealed end to end when the pairing has a key: the relay sees no title', async () => {
    const work = join(root, 'profiles', 'work');
    await relay.pair(work);
    const { installationId, gatewayId, secret } = await provisionPushKey(work);
    const phone = new ExchangingPhone(host.url, 'phone', PHONE_LABEL, 'iphone-work', { profile: 'work' });
    await phone.agree();
    await phone.send(batch(false));

    const { written, push } = await pushOf('work', 'conduit_calendar', {
      action: 'add_event',
      calendar: 'cal-home',
      title: 'Secret meeting',
      start: `${TOMORROW}T09:00`,
    });
    expect(push.payload).toMatchObject({
      aps: { alert: { title: 'Change to review' }, 'mutable-content': 1 },
      conduit: { type: 'phone.changes', mode: 'alert', e2e: 1 },
    });
    expect(JSON.stringify(push)).not.toContain('Secret meeting');
    expect(JSON.stringify(push)).not.toContain(written.change.id);
    const envelope = push.payload.conduit_e2e as NodeEnvelope;
    const keys = nodeKeys(secret);
    expect(envelope.msg).toBe(nodeKeyedId(keys.meta, `phone:${written.change.id}`));
    expect(nodeOpen(envelope, 'phone.changes', installationId, gatewayId, keys.push)).toEqual({
      title: `Add “Secret meeting” to Home, ${TOMORROW} 09:00 UTC`,
      body: 'Hermes asks you to approve this change.',
      profile: 'work',
    });
    expect((await phone.exchange()).changes.map((change) => change.id)).toEqual([written.change.id]);
  });

  it('loses nothing when the relay is gone: the phone finds the change on its next exchange', async () => {
    await relay.stop();
    const phone = new ExchangingPhone(host.url, 'phone', PHONE_LABEL, 'iphone-later');
    expect((await phone.agree()).status).toBe(200);
    // The most recently synced phone that shares reminders gets the change.
    await phone.send(batch(false));
    const written = await write('default', 'conduit_calendar', {
      action: 'add_reminder',
      list: 'list-todo',
      title: 'Renew passport',
    });
    expect(written).toMatchObject({
      phone_notified: false,
      nudge: 'The notification could not be sent now; the phone sees the change when it next syncs.',
    });
    const handed = await phone.exchange();
    expect(handed.changes.map((change) => change.id)).toContain(written.change.id);
  });
});
