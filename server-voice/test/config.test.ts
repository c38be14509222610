import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { parseIceServers } from '../src/signalling/ice-servers.js';

const base = { HERMES_REALTIME_API_KEY: 'k' };

/** A Hermes profile home whose config.yaml holds `yaml`. */
function profileHome(yaml: string): string {
  const home = path.join(mkdtempSync(path.join(os.tmpdir(), 'voice-profile-')), 'profiles', 'mira');
  mkdirSync(home, { recursive: true });
  writeFileSync(path.join(home, 'config.yaml'), yaml);
  return home;
}

function configFile(content: unknown): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'voice-config-')), 'voice.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

describe('loadConfig', () => {
  it('has the reference defaults', () => {
    const config = loadConfig(base);
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8091,
      maxCalls: 8,
      maxCallSeconds: 7200,
      callSetupTimeoutMs: 30_000,
      iceServers: [],
      proxySigningKey: null,
      bargeIn: false,
      agent: { kind: 'echo' },
      debug: false,
      lowerHelperThreads: true,
      mediaSender: 'process',
      senderRealtimePriority: 10,
    });
    expect(config.audio.endpoint.silenceDurationUs).toBe(1_500_000);
    expect(loadConfig({ ...base, HERMES_REALTIME_MEDIA_SENDER: 'inline' }).mediaSender).toBe('inline');
    expect(loadConfig({ ...base, HERMES_REALTIME_SENDER_RT_PRIORITY: '0' }).senderRealtimePriority).toBe(0);
    expect(loadConfig({ ...base, HERMES_REALTIME_LOWER_HELPER_THREADS: 'false' }).lowerHelperThreads).toBe(false);
  });

  it('reads a JSON config file, and the environment wins over it', () => {
    const file = configFile({
      max_calls: 3,
      silence_duration: 0.8,
      ice_servers: [{ urls: ['stun:stun.example.org:3478'] }],
      agent: { kind: 'openai', url: 'http://127.0.0.1:8000/v1', model: 'm' },
      speech: { HERMES_REALTIME_STT_BASE_URL: 'http://127.0.0.1:8000/v1' },
    });
    const config = loadConfig({ ...base, HERMES_REALTIME_CONFIG: file, HERMES_REALTIME_MAX_CALLS: '5' });
    expect(config.maxCalls).toBe(5);
    expect(config.audio.endpoint.silenceDurationUs).toBe(800_000);
    expect(config.iceServers).toEqual([{ urls: ['stun:stun.example.org:3478'] }]);
    expect(config.agent).toEqual({ kind: 'openai', baseUrl: 'http://127.0.0.1:8000/v1', apiKey: '', model: 'm' });
    expect(config.speechEnv).toEqual({ HERMES_REALTIME_STT_BASE_URL: 'http://127.0.0.1:8000/v1' });
  });

  it.each([
    [{ HERMES_REALTIME_MAX_CALLS: '0' }, /HERMES_REALTIME_MAX_CALLS/],
    [{ HERMES_REALTIME_MAX_CALLS: 'many' }, /HERMES_REALTIME_MAX_CALLS/],
    [{ HERMES_REALTIME_PORT: '70000' }, /HERMES_REALTIME_PORT/],
    [{ HERMES_REALTIME_MAX_CALL_SECONDS: '1.5' }, /HERMES_REALTIME_MAX_CALL_SECONDS/],
    [{ HERMES_REALTIME_SILENCE_DURATION: '0.1' }, /silence_duration/],
    [{ HERMES_REALTIME_ICE_SERVERS: '{"urls":"stun:x"}' }, /HERMES_REALTIME_ICE_SERVERS/],
    [{ HERMES_REALTIME_ICE_SERVERS: 'not json' }, /HERMES_REALTIME_ICE_SERVERS/],
    [{ HERMES_REALTIME_AGENT: 'gpt' }, /HERMES_REALTIME_AGENT/],
    [{ HERMES_REALTIME_AGENT: 'hermes' }, /HERMES_REALTIME_AGENT_URL/],
    [{ HERMES_REALTIME_AGENT: 'openai', HERMES_REALTIME_AGENT_URL: 'http://x/v1' }, /HERMES_REALTIME_AGENT_MODEL/],
    [{ HERMES_REALTIME_AGENT: 'hermes', HERMES_REALTIME_AGENT_URL: 'ftp://x' }, /http/],
    [{ HERMES_REALTIME_BARGE_IN: 'maybe' }, /HERMES_REALTIME_BARGE_IN/],
    [{ HERMES_REALTIME_LOWER_HELPER_THREADS: 'sometimes' }, /HERMES_REALTIME_LOWER_HELPER_THREADS/],
    [{ HERMES_REALTIME_MEDIA_SENDER: 'thread' }, /HERMES_REALTIME_MEDIA_SENDER must be "process" or "inline"/],
    [{ HERMES_REALTIME_SENDER_RT_PRIORITY: '100' }, /HERMES_REALTIME_SENDER_RT_PRIORITY/],
    [{ HERMES_REALTIME_SENDER_RT_PRIORITY: 'high' }, /HERMES_REALTIME_SENDER_RT_PRIORITY/],
  ])('refuses %o with a message naming the setting', (env, message) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ...env })).toThrow(message);
  });

  it('refuses an unreadable, non-JSON or non-object config file', () => {
    expect(() => loadConfig({ ...base, HERMES_REALTIME_CONFIG: '/nonexistent/voice.json' })).toThrow(/cannot read/);
    expect(() => loadConfig({ ...base, HERMES_REALTIME_CONFIG: configFile('{oops') })).toThrow(/not valid JSON/);
    expect(() => loadConfig({ ...base, HERMES_REALTIME_CONFIG: configFile([1]) })).toThrow(/JSON object/);
    expect(() => loadConfig({ ...base, HERMES_REALTIME_CONFIG: configFile({ speech: { OTHER: 'x' } }) })).toThrow(
      /unknown key/,
    );
  });
});

describe('the Hermes profile settings', () => {
  const home = (yaml: string) => ({ ...base, HERMES_HOME: profileHome(yaml) });

  it('streams captions and ends a reply after 120 s when there is no Hermes profile', () => {
    const config = loadConfig(base);
    expect(config.streamCaptions).toBe(true);
    expect(config.replyCompletionTimeoutMs).toBe(120_000);
  });

  it("follows the profile's display.platforms.realtime.streaming, then streaming.enabled, else final-only", () => {
    expect(loadConfig(home('model:\n  default: m\n')).streamCaptions).toBe(false);
    expect(loadConfig(home('display:\n  platforms:\n    realtime:\n      streaming: true\n')).streamCaptions).toBe(
      true,
    );
    // The per-platform key wins over the gateway-wide policy, either way.
    expect(
      loadConfig(home('streaming:\n  enabled: true\ndisplay:\n  platforms:\n    realtime:\n      streaming: false\n'))
        .streamCaptions,
    ).toBe(false);
    expect(loadConfig(home('streaming:\n  enabled: true\n')).streamCaptions).toBe(true);
    // display.streaming is the CLI's setting (seed), not the gateway's.
    expect(loadConfig(home('display:\n  streaming: true\n')).streamCaptions).toBe(false);
    expect(() => loadConfig(home('display:\n  platforms:\n    realtime:\n      streaming: sometimes\n'))).toThrow(
      /display\.platforms\.realtime\.streaming \(.*config\.yaml\) must be true or false/,
    );
  });

  it('takes tts.streaming.completion_timeout in seconds from 1 to 600', () => {
    const timeout = (value: string) => home(`tts:\n  streaming:\n    completion_timeout: ${value}\n`);
    expect(loadConfig(timeout('30')).replyCompletionTimeoutMs).toBe(30_000);
    expect(loadConfig(timeout('1')).replyCompletionTimeoutMs).toBe(1_000);
    expect(loadConfig(timeout('600')).replyCompletionTimeoutMs).toBe(600_000);
    expect(loadConfig(timeout('2.5')).replyCompletionTimeoutMs).toBe(2_500);
    for (const bad of ['0', '0.5', '601', '-5', 'soon', 'true', '"  "']) {
      expect(() => loadConfig(timeout(bad)), bad).toThrow(ConfigError);
      expect(() => loadConfig(timeout(bad)), bad).toThrow(
        /tts\.streaming\.completion_timeout \(.*config\.yaml\) must be seconds from 1 to 600/,
      );
    }
  });

  it('refuses to start when the realtime platform is disabled, by the environment or the profile', () => {
    for (const value of ['false', '0', 'no'])
      expect(() => loadConfig({ ...base, HERMES_REALTIME_ENABLED: value })).toThrow(
        /HERMES_REALTIME_ENABLED is false: the realtime platform is disabled for this profile/,
      );
    const disabled = home('platforms:\n  realtime:\n    enabled: false\n');
    expect(() => loadConfig(disabled)).toThrow(/platforms\.realtime\.enabled \(.*config\.yaml\) is false/);
    // The environment wins over the profile, as for every other setting.
    expect(loadConfig({ ...disabled, HERMES_REALTIME_ENABLED: 'true' }).port).toBe(8091);
    expect(loadConfig({ ...base, HERMES_REALTIME_ENABLED: '1' }).port).toBe(8091);
    expect(() => loadConfig({ ...base, HERMES_REALTIME_ENABLED: 'perhaps' })).toThrow(/HERMES_REALTIME_ENABLED/);
  });

  it('takes HERMES_REALTIME_ALLOW_ALL_USERS true or unset, and refuses a per-user restriction it cannot enforce', () => {
    expect(loadConfig({ ...base, HERMES_REALTIME_ALLOW_ALL_USERS: 'true' }).apiKey).toBe('k');
    expect(() => loadConfig({ ...base, HERMES_REALTIME_ALLOW_ALL_USERS: 'false' })).toThrow(
      /HERMES_REALTIME_ALLOW_ALL_USERS is false, but this gateway has no per-user allowlist/,
    );
    expect(() => loadConfig({ ...base, HERMES_REALTIME_ALLOW_ALL_USERS: 'everyone' })).toThrow(
      /HERMES_REALTIME_ALLOW_ALL_USERS must be true or false/,
    );
    expect(() => loadConfig({ ...base, HERMES_REALTIME_ALLOWED_USERS: 'alice,bob' })).toThrow(
      /HERMES_REALTIME_ALLOWED_USERS is set, but this gateway cannot restrict calls by user/,
    );
  });

  it('names the Hermes dashboard that runs slash commands, with its token never in an error', () => {
    const hermes = { ...base, HERMES_REALTIME_AGENT: 'hermes', HERMES_REALTIME_AGENT_URL: 'http://127.0.0.1:8642' };
    expect(loadConfig(hermes).agent).toEqual({
      kind: 'hermes',
      baseUrl: 'http://127.0.0.1:8642',
      apiKey: '',
      commands: null,
    });
    const withDashboard = { ...hermes, HERMES_REALTIME_AGENT_DASHBOARD_URL: 'http://127.0.0.1:9119/' };
    expect(loadConfig({ ...withDashboard, HERMES_DASHBOARD_SESSION_TOKEN: 'pinned-token' }).agent).toMatchObject({
      commands: { dashboardUrl: 'http://127.0.0.1:9119', token: 'pinned-token' },
    });
    expect(
      loadConfig({
        ...withDashboard,
        HERMES_DASHBOARD_SESSION_TOKEN: 'pinned-token',
        HERMES_REALTIME_AGENT_DASHBOARD_TOKEN: 'own-token',
      }).agent,
    ).toMatchObject({ commands: { token: 'own-token' } });
    expect(() => loadConfig(withDashboard)).toThrow(/HERMES_REALTIME_AGENT_DASHBOARD_TOKEN/);
    expect(() =>
      loadConfig({
        ...hermes,
        HERMES_REALTIME_AGENT_DASHBOARD_URL: 'ws://x',
        HERMES_DASHBOARD_SESSION_TOKEN: 'secret-t',
      }),
    ).toThrow(/^(?!.*secret-t).*HERMES_REALTIME_AGENT_DASHBOARD_URL must be an http\(s\) URL/);
  });
});

describe('parseIceServers', () => {
  it('accepts STUN/TURN entries and refuses bad ones without echoing credentials', () => {
    expect(parseIceServers([{ urls: 'turns:turn.example.org:443', username: 'u', credential: 'secret-cred' }])).toEqual(
      { ok: true, value: [{ urls: 'turns:turn.example.org:443', username: 'u', credential: 'secret-cred' }] },
    );
    const bad = [
      Array.from({ length: 9 }, () => ({ urls: 'stun:a' })),
      [{ urls: 'http://a' }],
      [{ urls: [] }],
      [{ urls: Array.from({ length: 9 }, () => 'stun:a') }],
      [{ urls: 'stun:a', extra: 1 }],
      [{ urls: 'stun:' + 'a'.repeat(2048) }],
      [{ urls: 'stun:a', credential: 'x'.repeat(1025) }],
      ['stun:a'],
    ];
    for (const value of bad) {
      const parsed = parseIceServers(value);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).not.toContain('secret');
    }
  });
});
