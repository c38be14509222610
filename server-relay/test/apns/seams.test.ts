import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApnsConfigError, apnsOptionsFromEnv, createApnsSender } from '../../src/apns/index.js';
import { ApnsSimulator } from '../../src/apns/simulator.js';
import { KEY_ID, providerKeyPair, TEAM_ID, TOKEN, TOPIC } from './keys.js';

const dir = mkdtempSync(join(tmpdir(), 'apns-seams-'));
const key = providerKeyPair();
const keyPath = join(dir, 'AuthKey.p8');
writeFileSync(keyPath, key.privatePem, { mode: 0o600 });
const alert = { payload: { aps: { alert: { title: 't', body: 'b' } } }, collapseId: 'c1', threadId: 't1' };
const voip = { payload: { aps: {} }, pushType: 'voip' as const, topic: `${TOPIC}.voip`, expiration: 1_800_000_000 };

/** The capture file's JSON lines, parsed. */
function capturedLines(path: string): unknown[] {
  return readFileSync(path, 'utf8')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as unknown);
}

describe('APNS_MODE seams', () => {
  it('accept answers 200, reject answers 403 InvalidProviderToken, throw rejects', async () => {
    const accept = createApnsSender(apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_MODE: 'accept' }));
    expect(await accept.send(TOKEN, alert)).toEqual({ ok: true, status: 200 });
    const reject = createApnsSender(apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_MODE: 'reject' }));
    expect(await reject.send(TOKEN, alert)).toEqual({ ok: false, status: 403, reason: 'InvalidProviderToken' });
    const failing = createApnsSender(apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_MODE: 'throw' }));
    await expect(failing.send(TOKEN, alert)).rejects.toThrow();
    await Promise.all([accept.close(), reject.close(), failing.close()]);
  });

  it('APNS_CAPTURE_PATH alone accepts and writes one JSON line per send, mode 0600', async () => {
    const path = join(dir, 'nested', 'capture.jsonl');
    const sender = createApnsSender(apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_CAPTURE_PATH: path }));
    expect(await sender.send(TOKEN, alert)).toEqual({ ok: true, status: 200 });
    expect(await sender.send(TOKEN, voip)).toEqual({ ok: true, status: 200 });
    await sender.close();
    const lines = capturedLines(path);
    expect(lines).toEqual([
      { deviceToken: TOKEN, notification: { payload: alert.payload, collapseId: 'c1', threadId: 't1' } },
      {
        deviceToken: TOKEN,
        notification: { payload: { aps: {} }, pushType: 'voip', topic: `${TOPIC}.voip`, expiration: 1_800_000_000 },
      },
    ]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('captures the push type, topic, priority and expiration of background and location sends', async () => {
    const path = join(dir, 'new-types.jsonl');
    const sender = createApnsSender(apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_CAPTURE_PATH: path }));
    const background = {
      payload: { aps: { 'content-available': 1 } },
      pushType: 'background' as const,
      priority: 5 as const,
      expiration: 1_800_000_000,
    };
    const location = {
      payload: { aps: {}, conduit_e2e: { v: 1 } },
      pushType: 'location' as const,
      topic: `${TOPIC}.location-query`,
      priority: 10 as const,
      expiration: 1_800_000_300,
    };
    await sender.send(TOKEN, background);
    await sender.send(TOKEN, location);
    await sender.close();
    const lines = capturedLines(path);
    expect(lines).toEqual([
      { deviceToken: TOKEN, notification: background },
      { deviceToken: TOKEN, notification: location },
    ]);
  });

  it('concurrent sends are captured once each, in call order, and each send waits for its own line', async () => {
    const path = join(dir, 'concurrent.jsonl');
    const sender = createApnsSender(apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_CAPTURE_PATH: path }));
    const sends = Array.from({ length: 200 }, (_, i) =>
      sender.send(TOKEN, { ...alert, collapseId: `c${i}` }).then((result) => {
        // The line is on disk by the time the send resolves.
        const captured = readFileSync(path, 'utf8');
        expect(captured).toContain(`"collapseId":"c${i}"`);
        return result;
      }),
    );
    expect((await Promise.all(sends)).every((result) => result.ok)).toBe(true);
    await sender.close();
    const ids = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { notification: { collapseId: string } }).notification.collapseId);
    expect(ids).toEqual(Array.from({ length: 200 }, (_, i) => `c${i}`));
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('writes only pushes APNs took: a rejecting mode and a refused VoIP push leave no line (as the reference)', async () => {
    const path = join(dir, 'loose.jsonl');
    writeFileSync(path, '', { mode: 0o644 });
    const rejecting = createApnsSender(
      apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_CAPTURE_PATH: path, APNS_MODE: 'reject' }),
    );
    expect((await rejecting.send(TOKEN, alert)).status).toBe(403);
    await rejecting.close();
    expect(readFileSync(path, 'utf8')).toBe('');
    const refusingVoip = createApnsSender(
      apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_CAPTURE_PATH: path, APNS_VOIP_FAILURE: 'Unregistered' }),
    );
    expect((await refusingVoip.send(TOKEN, voip)).status).toBe(410);
    expect((await refusingVoip.send(TOKEN, alert)).ok).toBe(true);
    await refusingVoip.close();
    // The first line written also narrows a file an older relay left 0644.
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(capturedLines(path)).toEqual([
      { deviceToken: TOKEN, notification: { collapseId: 'c1', payload: alert.payload, threadId: 't1' } },
    ]);
  });

  it('APNS_VOIP_FAILURE refuses VoIP sends only: Unregistered as 410, other reasons as 400, throw rejects', async () => {
    const gone = createApnsSender(
      apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_MODE: 'accept', APNS_VOIP_FAILURE: 'Unregistered' }),
    );
    expect(await gone.send(TOKEN, voip)).toEqual({ ok: false, status: 410, reason: 'Unregistered' });
    expect(await gone.send(TOKEN, alert)).toEqual({ ok: true, status: 200 });
    const bad = createApnsSender(
      apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_MODE: 'accept', APNS_VOIP_FAILURE: 'BadDeviceToken' }),
    );
    expect(await bad.send(TOKEN, voip)).toEqual({ ok: false, status: 400, reason: 'BadDeviceToken' });
    const thrown = createApnsSender(
      apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_MODE: 'accept', APNS_VOIP_FAILURE: 'throw' }),
    );
    await expect(thrown.send(TOKEN, voip)).rejects.toThrow();
    expect((await thrown.send(TOKEN, alert)).ok).toBe(true);
  });

  it('APNS_VOIP_FAILURE_TOPIC limits the failure to VoIP sends to that topic (the Watch)', async () => {
    const watchTopic = `${TOPIC}.watchkitapp.voip`;
    const sender = createApnsSender(
      apnsOptionsFromEnv({
        APNS_TOPIC: TOPIC,
        APNS_MODE: 'accept',
        APNS_VOIP_FAILURE: 'DeviceTokenNotForTopic',
        APNS_VOIP_FAILURE_TOPIC: watchTopic,
      }),
    );
    expect(await sender.send(TOKEN, voip)).toEqual({ ok: true, status: 200 });
    expect(await sender.send(TOKEN, { ...voip, topic: watchTopic })).toEqual({
      ok: false,
      status: 400,
      reason: 'DeviceTokenNotForTopic',
    });
  });
});

describe('apnsOptionsFromEnv', () => {
  it('names the variable of a bad value', () => {
    expect(() => apnsOptionsFromEnv({})).toThrow('APNS_TOPIC is required.');
    expect(() => apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_MODE: 'maybe' })).toThrow(/^APNS_MODE/);
    expect(() => apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_MODE: 'accept', APNS_ORIGIN: 'http://x' })).toThrow(
      /^APNS_ORIGIN/,
    );
    expect(() => apnsOptionsFromEnv({ APNS_TOPIC: TOPIC })).toThrow('APNS_KEY_PATH is required.');
    expect(() => apnsOptionsFromEnv({ APNS_TOPIC: TOPIC, APNS_KEY_PATH: keyPath, APNS_KEY_ID: KEY_ID })).toThrow(
      'APNS_TEAM_ID is required.',
    );
    expect(() =>
      apnsOptionsFromEnv({
        APNS_TOPIC: TOPIC,
        APNS_KEY_PATH: join(dir, 'missing.p8'),
        APNS_KEY_ID: KEY_ID,
        APNS_TEAM_ID: TEAM_ID,
      }),
    ).toThrow('APNS_KEY_PATH could not be read.');
  });

  it('refuses a file that is not an EC P-256 key at boot, without echoing it', () => {
    const junk = join(dir, 'junk.p8');
    writeFileSync(junk, '-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n');
    const options = apnsOptionsFromEnv({
      APNS_TOPIC: TOPIC,
      APNS_KEY_PATH: junk,
      APNS_KEY_ID: KEY_ID,
      APNS_TEAM_ID: TEAM_ID,
    });
    let message = '';
    try {
      createApnsSender(options);
    } catch (error) {
      expect(error).toBeInstanceOf(ApnsConfigError);
      message = (error as Error).message;
    }
    expect(message).toMatch(/^APNS_KEY_PATH is not a usable APNs key/);
    expect(message).not.toContain('c2VjcmV0');
  });

  it('defaults APNS_ORIGIN to production APNs', () => {
    const options = apnsOptionsFromEnv({
      APNS_TOPIC: TOPIC,
      APNS_KEY_PATH: keyPath,
      APNS_KEY_ID: KEY_ID,
      APNS_TEAM_ID: TEAM_ID,
    });
    expect(options.provider?.origin).toBe('https://api.push.apple.com');
  });
});

describe('createApnsSender with provider credentials', () => {
  let simulator: ApnsSimulator;
  beforeAll(async () => {
    simulator = await ApnsSimulator.start({ publicKey: key.publicPem, keyId: KEY_ID, teamId: TEAM_ID });
  });
  afterAll(() => simulator.close());

  it('builds the HTTP/2 client from the environment and pushes to APNS_ORIGIN', async () => {
    const options = apnsOptionsFromEnv({
      APNS_TOPIC: TOPIC,
      APNS_KEY_PATH: keyPath,
      APNS_KEY_ID: KEY_ID,
      APNS_TEAM_ID: TEAM_ID,
      APNS_ORIGIN: simulator.origin,
    });
    // Trust for the simulator's throwaway certificate (production trusts the system store).
    const sender = createApnsSender({ ...options, provider: { ...options.provider!, ca: simulator.ca } });
    expect(await sender.send(TOKEN, alert)).toEqual({ ok: true, status: 200 });
    await sender.close();
    expect(simulator.requests[0]?.headers['apns-topic']).toBe(TOPIC);
  });

  it('APNS_VOIP_FAILURE also wraps the real client', async () => {
    const options = apnsOptionsFromEnv({
      APNS_TOPIC: TOPIC,
      APNS_KEY_PATH: keyPath,
      APNS_KEY_ID: KEY_ID,
      APNS_TEAM_ID: TEAM_ID,
      APNS_ORIGIN: simulator.origin,
      APNS_VOIP_FAILURE: 'Unregistered',
    });
    const sender = createApnsSender({ ...options, provider: { ...options.provider!, ca: simulator.ca } });
    const before = simulator.requests.length;
    expect(await sender.send(TOKEN, voip)).toMatchObject({ status: 410 });
    expect(simulator.requests.length).toBe(before);
    await sender.close();
  });
});
