import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  agentIdentity,
  apiOrigin,
  conferenceConfigFromEnv,
  isAllowedParticipant,
} from '../../src/conference/conference-config.js';
import { ConfigError } from '../../src/config.js';

const BASE = { LIVEKIT_URL: 'wss://demo.livekit.cloud', LIVEKIT_API_KEY: 'key', LIVEKIT_API_SECRET: 'secret' };

describe('Conference mode configuration (LIVEKIT_*)', () => {
  it('is off without LIVEKIT_URL', () => {
    expect(conferenceConfigFromEnv({})).toBeNull();
  });

  it('defaults: room hermes, no name (the model is asked; Hermes is the fallback), 30 s presence on LiveKit Cloud, 30 s tool timeout', () => {
    const config = conferenceConfigFromEnv(BASE);
    expect(config).toMatchObject({
      room: 'hermes',
      agentName: null,
      profileConfigFile: null,
      agentAvatar: null,
      homeChannel: 'hermes',
      presencePollMs: 30_000,
      toolTimeoutMs: 30_000,
      allowAllUsers: false,
      remoteToolPolicy: null,
    });
    expect(agentIdentity('Hermes')).toBe('hermes-hermes');
    // Until a name is chosen the agent's own identity is hermes-hermes, and never counts as a participant.
    const open = conferenceConfigFromEnv({ ...BASE, LIVEKIT_ALLOW_ALL_USERS: '1' });
    expect(open && isAllowedParticipant(open, 'hermes-hermes')).toBe(false);
    expect(open && isAllowedParticipant(open, 'hermes-mira', 'Mira')).toBe(false);
    expect(open && isAllowedParticipant(open, 'hermes-hermes', 'Mira')).toBe(true);
  });

  it('the toolset switch is read from the profile’s config.yaml: HERMES_HOME, else ~/.hermes', () => {
    expect(conferenceConfigFromEnv({ ...BASE, HERMES_HOME: '/srv/hermes/profiles/mira' })?.profileConfigFile).toBe(
      '/srv/hermes/profiles/mira/config.yaml',
    );
    expect(conferenceConfigFromEnv({ ...BASE, HOME: '/home/op' })?.profileConfigFile).toBe(
      '/home/op/.hermes/config.yaml',
    );
  });

  it('polls every 5 s against a self-hosted server, or as LIVEKIT_PRESENCE_POLL_INTERVAL says', () => {
    expect(conferenceConfigFromEnv({ ...BASE, LIVEKIT_URL: 'ws://127.0.0.1:7880' })?.presencePollMs).toBe(5_000);
    expect(conferenceConfigFromEnv({ ...BASE, LIVEKIT_PRESENCE_POLL_INTERVAL: '12' })?.presencePollMs).toBe(12_000);
    expect(() => conferenceConfigFromEnv({ ...BASE, LIVEKIT_PRESENCE_POLL_INTERVAL: 'soon' })).toThrow(ConfigError);
  });

  it('reads the room, name, home channel, allowed users, allow-all and tool settings', () => {
    const config = conferenceConfigFromEnv({
      ...BASE,
      LIVEKIT_ROOM: 'studio',
      LIVEKIT_AGENT_NAME: 'Mira',
      LIVEKIT_HOME_CHANNEL: 'briefings',
      LIVEKIT_ALLOWED_USERS: ' alice, bob ,,',
      HERMES_LIVEKIT_TOOL_TIMEOUT_SEC: '7.5',
      HERMES_LIVEKIT_REMOTE_TOOL_POLICY: '{"tools":[]}',
    });
    expect(config).toMatchObject({ room: 'studio', agentName: 'Mira', homeChannel: 'briefings', toolTimeoutMs: 7_500 });
    expect([...(config?.allowedUsers ?? [])]).toEqual(['alice', 'bob']);
    expect(config && isAllowedParticipant(config, 'alice')).toBe(true);
    expect(config && isAllowedParticipant(config, 'mallory')).toBe(false);
    // The agent never counts as someone to talk to, even with allow-all.
    const open = conferenceConfigFromEnv({ ...BASE, LIVEKIT_ALLOW_ALL_USERS: 'true', LIVEKIT_AGENT_NAME: 'Mira' });
    expect(open && isAllowedParticipant(open, 'mallory')).toBe(true);
    expect(open && isAllowedParticipant(open, 'hermes-mira')).toBe(false);
  });

  it('needs the key and secret with a URL, and a ws/http URL', () => {
    expect(() => conferenceConfigFromEnv({ LIVEKIT_URL: 'wss://x.livekit.cloud' })).toThrow(
      'LIVEKIT_URL is set, so LIVEKIT_API_KEY and LIVEKIT_API_SECRET are required',
    );
    expect(() => conferenceConfigFromEnv({ ...BASE, LIVEKIT_URL: 'ftp://x' })).toThrow(ConfigError);
  });

  it('an avatar URL is kept; a local image becomes a data URI; other files are refused', () => {
    expect(conferenceConfigFromEnv({ ...BASE, LIVEKIT_AGENT_AVATAR: 'https://example.com/a.png' })?.agentAvatar).toBe(
      'https://example.com/a.png',
    );
    const folder = mkdtempSync(join(tmpdir(), 'avatar-'));
    chmodSync(folder, 0o700);
    const file = join(folder, 'face.png');
    writeFileSync(file, Buffer.from([0x89, 0x50, 0x4e, 0x47]), { mode: 0o600 });
    expect(conferenceConfigFromEnv({ ...BASE, LIVEKIT_AGENT_AVATAR: file })?.agentAvatar).toBe(
      'data:image/png;base64,iVBORw==',
    );
    expect(() => conferenceConfigFromEnv({ ...BASE, LIVEKIT_AGENT_AVATAR: join(folder, 'face.bmp') })).toThrow(
      ConfigError,
    );
  });

  it('the RoomService origin follows the signalling URL', () => {
    expect(apiOrigin('wss://demo.livekit.cloud')).toBe('https://demo.livekit.cloud');
    expect(apiOrigin('ws://127.0.0.1:7880/')).toBe('http://127.0.0.1:7880');
  });
});
