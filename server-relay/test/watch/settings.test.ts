import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WATCH_CAPABILITIES, watchSeamsFromEnv } from '../../src/watch/index.js';
import { providerKeyPair } from '../apns/keys.js';

const dir = mkdtempSync(join(tmpdir(), 'watch-settings-'));

describe('watchSeamsFromEnv', () => {
  it('reads the WATCH_* seams as positive integers', () => {
    expect(
      watchSeamsFromEnv({
        WATCH_CALL_WAIT_MS: '200',
        WATCH_HOST_POLL_WAIT_MS: ' 300 ',
        WATCH_HOST_GONE_MS: '',
        WATCH_AUDIO_IDLE_MS: '5',
      }),
    ).toEqual({ callWaitMs: 200, hostPollWaitMs: 300, audioIdleMs: 5 });
  });

  it.each(['0', '-1', '1.5', 'abc', '9007199254740993'])('refuses %s naming the variable', (value) => {
    expect(() => watchSeamsFromEnv({ WATCH_CALL_WAIT_MS: value })).toThrow(
      'WATCH_CALL_WAIT_MS must be a positive integer.',
    );
  });

  it('reads the Maps key with the APNs team id; refuses half a configuration or a bad key without echoing it', () => {
    const path = join(dir, 'maps.p8');
    writeFileSync(path, providerKeyPair().privatePem);
    const maps = watchSeamsFromEnv({ MAPS_KEY_ID: 'MK', MAPS_KEY_PATH: path, APNS_TEAM_ID: 'TEAM' }).maps;
    expect(maps).toMatchObject({ keyId: 'MK', teamId: 'TEAM', tokenUrl: 'https://maps-api.apple.com/v1/token' });
    expect(() => watchSeamsFromEnv({ MAPS_KEY_ID: 'MK' })).toThrow(/MAPS_KEY_ID and MAPS_KEY_PATH/);
    expect(() => watchSeamsFromEnv({ MAPS_KEY_ID: 'MK', MAPS_KEY_PATH: path })).toThrow(/APNS_TEAM_ID/);
    const junk = join(dir, 'junk.p8');
    writeFileSync(junk, 'secret-bytes');
    expect(() => watchSeamsFromEnv({ MAPS_KEY_ID: 'MK', MAPS_KEY_PATH: junk, APNS_TEAM_ID: 'T' })).toThrow(
      'MAPS_KEY_PATH is not a usable private key.',
    );
  });

  it('names the capabilities the Watch features add to /v1/meta', () => {
    expect(WATCH_CAPABILITIES).toEqual(['watch-tools-v1', 'watch-audio-v1', 'live-activities-v1', 'maps-token-v1']);
  });
});
