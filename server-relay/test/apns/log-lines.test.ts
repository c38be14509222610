/**
 * Operational log lines operators alert on keep the reference's JSON shape: `{level, message, …}`
 * with the reference's texts and field names (spec/relay/API.md, last section; the reference's
 * sendVoip in server.mjs). A real relay process sends through its HTTP/2 client to the APNs
 * simulator, which answers each token as the test scripts it; the test waits for each line as the
 * process prints it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '@conduit/prisma';
import { ApnsSimulator } from '../../src/apns/simulator.js';
import {
  deviceToken,
  eventId,
  pairHost,
  PUBLIC_URL,
  registerPhone,
  ROOMY_BUDGETS,
  startRelay,
  TOPIC,
  type Relay,
} from '../conformance/relay.js';
import { jsonLines, waitForLine } from '../support/log-lines.js';
import { providerKeyPair } from './keys.js';

const KEY_ID = 'LOGLINEKEY';
const TEAM_ID = 'LOGLINETEAM';
const WATCH_TOPIC = `${TOPIC}.watchkitapp.voip`;
const key = providerKeyPair();
const dir = mkdtempSync(join(tmpdir(), 'relay-log-lines-'));
let simulator: ApnsSimulator;
let relay: Relay;

beforeAll(async () => {
  simulator = await ApnsSimulator.start({
    publicKey: key.publicPem,
    keyId: KEY_ID,
    teamId: TEAM_ID,
    allowedTopics: [TOPIC, `${TOPIC}.voip`, WATCH_TOPIC],
  });
  relay = await startRelay({
    ...ROOMY_BUDGETS,
    APNS_MODE: '',
    APNS_CAPTURE_PATH: '',
    APNS_KEY_PATH: writeTemp('apns.p8', key.privatePem),
    APNS_KEY_ID: KEY_ID,
    APNS_TEAM_ID: TEAM_ID,
    APNS_ORIGIN: simulator.origin,
    NODE_EXTRA_CA_CERTS: writeTemp('simulator-ca.pem', simulator.ca),
  });
}, 90_000);
afterAll(async () => {
  await relay?.stop();
  await simulator?.close();
  rmSync(dir, { recursive: true, force: true });
});

function writeTemp(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

const CALL = { id: 'call-00000001', kind: 'done', session_ids: ['session-1'] };

/** A phone that rings on itself and its Watch; returns the log position before its call. */
async function call(answers: {
  phone?: Parameters<ApnsSimulator['answerFor']>[1];
  watch?: Parameters<ApnsSimulator['answerFor']>[1];
}) {
  const voip = deviceToken();
  const watch = deviceToken();
  const phone = await registerPhone(relay, { voip_token: voip, watch_voip_token: watch });
  const host = await pairHost(relay, phone);
  if (answers.phone) simulator.answerFor(voip, answers.phone);
  if (answers.watch) simulator.answerFor(watch, answers.watch);
  const from = relay.output().length;
  const reply = await relay.call('POST', '/v1/events', {
    auth: host.auth,
    body: { type: 'call.requested', event_id: eventId(), session_id: 'session-1', call: CALL },
  });
  return { reply, from, phone };
}

const isMessage = (message: string) => (line: Record<string, unknown>) => line.message === message;

describe('log lines operators alert on', () => {
  it('the start line: Conduit push relay listening, with host, port and public_url', () => {
    const [started] = jsonLines(relay).filter(isMessage('Conduit push relay listening'));
    expect(started).toMatchObject({
      level: 'info',
      host: '127.0.0.1',
      port: Number(new URL(relay.url).port),
      public_url: PUBLIC_URL,
    });
  });

  it('a Watch push APNs took logs watch voip sent with device: watch', async () => {
    const { reply, from } = await call({});
    expect(reply.json).toEqual({ accepted: true, delivered: true, rang: true });
    expect(await waitForLine(relay, isMessage('watch voip sent'), from)).toMatchObject({
      level: 'info',
      message: 'watch voip sent',
      device: 'watch',
    });
  });

  it('a Watch push refused TopicDisallowed: apns voip send refused, then apns key not allowed for this topic', async () => {
    const { reply, from } = await call({ watch: { status: 400, reason: 'TopicDisallowed' } });
    expect(reply.json).toEqual({ accepted: true, delivered: true, rang: true });
    const hint = await waitForLine(relay, isMessage('apns key not allowed for this topic'), from);
    expect(hint).toMatchObject({ level: 'warn', topic: WATCH_TOPIC });
    expect(jsonLines(relay, from).find(isMessage('apns voip send refused'))).toMatchObject({
      level: 'warn',
      device: 'watch',
      status: 400,
      reason: 'TopicDisallowed',
    });
  });

  it('a Watch push refused DeviceTokenNotForTopic names APNS_WATCH_TOPIC', async () => {
    const { from } = await call({ watch: { status: 400, reason: 'DeviceTokenNotForTopic' } });
    const hint = await waitForLine(relay, isMessage('apns voip topic refused, check APNS_WATCH_TOPIC'), from);
    expect(hint).toMatchObject({ level: 'warn', topic: WATCH_TOPIC });
  });

  it('a phone push refused: apns voip send refused with device: phone, and the call falls back to the alert', async () => {
    const { reply, from } = await call({ phone: { status: 410, reason: 'Unregistered' } });
    expect(reply.json).toEqual({ accepted: true, delivered: true });
    expect(
      await waitForLine(relay, (line) => line.message === 'apns voip send refused' && line.device === 'phone', from),
    ).toMatchObject({ level: 'warn', status: 410, reason: 'Unregistered' });
  });

  it('a refused token the store cannot forget: voip token clear failed, and the call still falls back to the alert', async () => {
    // A real SQLite refusal: a trigger on the relay's own database aborts clearing a PushKit token.
    const db = createDb(join(relay.dir, 'relay.sqlite'));
    await db.$executeRawUnsafe(
      `CREATE TRIGGER "keep_voip" BEFORE UPDATE OF "voipToken" ON "Installation" ` +
        `WHEN NEW."voipToken" IS NULL BEGIN SELECT RAISE(ABORT, 'voip token kept'); END`,
    );
    try {
      const { reply, from } = await call({ phone: { status: 410, reason: 'Unregistered' } });
      expect(reply.json).toEqual({ accepted: true, delivered: true });
      const failed = await waitForLine(relay, isMessage('voip token clear failed'), from);
      expect(failed).toMatchObject({ level: 'error', device: 'phone' });
      expect(typeof failed.error).toBe('string');
    } finally {
      await db.$executeRawUnsafe('DROP TRIGGER "keep_voip"');
      await db.$disconnect();
    }
  });

  it('a phone push APNs never answered: apns voip send threw with device and error', async () => {
    const { reply, from } = await call({ phone: 'reset-stream' });
    expect(reply.json).toEqual({ accepted: true, delivered: true });
    const threw = await waitForLine(relay, isMessage('apns voip send threw'), from);
    expect(threw).toMatchObject({ level: 'error', device: 'phone' });
    expect(typeof threw.error).toBe('string');
  });

  it('an alert APNs never answered: apns send threw with error, and 502 apns_unreachable', async () => {
    const phone = await registerPhone(relay);
    const host = await pairHost(relay, phone);
    simulator.answerFor(phone.token, 'reset-stream');
    const from = relay.output().length;
    const reply = await relay.call('POST', '/v1/events', {
      auth: host.auth,
      body: { type: 'response.ready', event_id: eventId() },
    });
    expect(reply.status).toBe(502);
    expect(reply.json).toEqual({ error: 'apns_unreachable' });
    const threw = await waitForLine(relay, isMessage('apns send threw'), from);
    expect(threw).toMatchObject({ level: 'error' });
    expect(typeof threw.error).toBe('string');
  });

  it('no line the relay prints names its text msg: the key is message', () => {
    const operational = jsonLines(relay).filter((line) => !('method' in line));
    expect(operational.length).toBeGreaterThan(5);
    for (const line of operational) {
      expect(line).toHaveProperty('message');
      expect(line).not.toHaveProperty('msg');
    }
  });
});
