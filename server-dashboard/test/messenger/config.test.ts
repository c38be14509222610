import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './harness.js';
import { normalizeRelayBaseUrl } from '../../src/messenger/base-url.js';
import { MessengerConfigError, readMessengerConfig } from '../../src/messenger/config.js';
import { loadProfileSettings, parseDotenv } from '../../src/messenger/profile-settings.js';

describe('RELAY_BASE_URL normalisation', () => {
  it.each([
    ['https://api.relayapp.im', 'https://api.relayapp.im', 'wss://api.relayapp.im/v1/websocket'],
    ['  https://API.RelayApp.im/  ', 'https://api.relayapp.im', 'wss://api.relayapp.im/v1/websocket'],
    ['https://api.relayapp.im:443', 'https://api.relayapp.im', 'wss://api.relayapp.im/v1/websocket'],
    [
      'https://api.staging.relayapp.im:8443',
      'https://api.staging.relayapp.im:8443',
      'wss://api.staging.relayapp.im:8443/v1/websocket',
    ],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080', 'ws://127.0.0.1:8080/v1/websocket'],
    ['http://localhost', 'http://localhost', 'ws://localhost/v1/websocket'],
    ['http://[::1]:80', 'http://[::1]', 'ws://[::1]/v1/websocket'],
    ['https://[2001:db8:0:0:0:0:0:1]', 'https://[2001:db8::1]', 'wss://[2001:db8::1]/v1/websocket'],
    ['https://bücher.example', 'https://xn--bcher-kva.example', 'wss://xn--bcher-kva.example/v1/websocket'],
  ])('%s → %s', (raw, origin, ws) => {
    expect(normalizeRelayBaseUrl(raw)).toEqual({ origin, websocketUrl: ws });
  });

  it.each([
    ['http://api.relayapp.im', /https/],
    ['ftp://api.relayapp.im', /https origin/],
    ['https://user:pw@api.relayapp.im', /credentials/],
    ['https://api.relayapp.im/v1', /origin without path/],
    ['https://api.relayapp.im?x=1', /origin without path/],
    ['https://api.relayapp.im#frag', /origin without path/],
    ['https://api relayapp.im', /whitespace/],
    ['not a url', /whitespace|not a URL/],
    ['', /empty/],
  ])('%j fails closed', (raw, message) => {
    expect(() => normalizeRelayBaseUrl(raw)).toThrow(message);
  });
});

describe('messenger configuration', () => {
  const base = { RELAY_AGENT_TOKEN: 'tok' };

  it('defaults: production origin, state under the profile home, reply_to auto, group mentions', () => {
    const c = readMessengerConfig(base, '/home/u/.hermes');
    expect(c.relay.origin).toBe('https://api.relayapp.im');
    expect(c.stateDir).toBe('/home/u/.hermes/relay');
    expect(c.replyToMode).toBe('auto');
    expect(c.groupChatPolicy).toBe('mentions');
    expect(c.allowedContacts.size).toBe(0);
  });

  it('an invalid RELAY_BASE_URL fails closed and is never replaced by the production default', () => {
    expect(() => readMessengerConfig({ ...base, RELAY_BASE_URL: 'http://api.relayapp.im' }, '/h')).toThrow(
      MessengerConfigError,
    );
    expect(() => readMessengerConfig({ ...base, RELAY_API_URL: 'https://x.example/path' }, '/h')).toThrow(
      /RELAY_BASE_URL/,
    );
  });

  it('the token is required', () => {
    expect(() => readMessengerConfig({}, '/h')).toThrow(/RELAY_AGENT_TOKEN is required/);
  });

  it('environment wins over the profile extra map; lists come from csv or YAML lists', () => {
    const c = readMessengerConfig({ ...base, RELAY_ALLOWED_CONTACTS: ' a , b ,' }, '/h', {
      allowed_contacts: ['z'],
      reply_to_mode: 'all',
    });
    expect([...c.allowedContacts]).toEqual(['a', 'b']);
    expect(c.replyToMode).toBe('all');
    const d = readMessengerConfig(base, '/h', {
      allowed_contacts: ['x', 'y'],
      base_url: 'https://api.staging.relayapp.im',
      state_dir: '/s',
    });
    expect([...d.allowedContacts]).toEqual(['x', 'y']);
    expect(d.relay.origin).toBe('https://api.staging.relayapp.im');
    expect(d.stateDir).toBe('/s');
  });

  it('an unknown group policy means mentions; an unknown reply_to mode is refused', () => {
    expect(readMessengerConfig({ ...base, RELAY_GROUP_CHAT_POLICY: 'everything' }, '/h').groupChatPolicy).toBe(
      'mentions',
    );
    expect(readMessengerConfig({ ...base, RELAY_GROUP_CHAT_POLICY: 'ALL' }, '/h').groupChatPolicy).toBe('all');
    expect(() => readMessengerConfig({ ...base, RELAY_REPLY_TO_MODE: 'sometimes' }, '/h')).toThrow(
      /RELAY_REPLY_TO_MODE/,
    );
  });

  it('group approval admins: allow_admin_from from config.yaml, the environment over it, a group list over both', () => {
    expect(readMessengerConfig(base, '/h').groupApprovalAdmins.size).toBe(0);
    const home = tempDir('msgr-admins-');
    fs.writeFileSync(
      path.join(home, 'config.yaml'),
      'gateway:\n  platforms:\n    relayapp:\n      extra:\n        allow_admin_from: ["c-1", "c-2"]\n',
    );
    const fromYaml = loadProfileSettings(base, home);
    expect([...readMessengerConfig(fromYaml.env, home, fromYaml.extra).groupApprovalAdmins]).toEqual(['c-1', 'c-2']);
    const fromEnv = loadProfileSettings({ ...base, RELAY_ALLOW_ADMIN_FROM: ' c-9 ,' }, home);
    expect([...readMessengerConfig(fromEnv.env, home, fromEnv.extra).groupApprovalAdmins]).toEqual(['c-9']);
    // Hermes keeps one admin list per scope: a group list, when set, is the one for groups.
    const scoped = readMessengerConfig({ ...base, RELAY_ALLOW_ADMIN_FROM: 'c-9' }, '/h', {
      group_allow_admin_from: ['g-1'],
    });
    expect([...scoped.groupApprovalAdmins]).toEqual(['g-1']);
  });

  it('reads the .env the Relay CLI writes', () => {
    expect(
      parseDotenv('# c\nexport RELAY_AGENT_TOKEN="a b"\nRELAY_BASE_URL=https://x.example # comment\nBAD LINE\n'),
    ).toEqual({
      RELAY_AGENT_TOKEN: 'a b',
      RELAY_BASE_URL: 'https://x.example',
    });
  });
});
