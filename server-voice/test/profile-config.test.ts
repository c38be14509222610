import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hermesHome, profileConfigFromText, readProfileConfig } from '../src/profile-config.js';

/** A config.yaml as `hermes config set` writes it (PyYAML block style), with what users add by hand. */
const HERMES_CONFIG = `# Hermes profile
model:
  default: gpt-5.6
  provider: openai-codex
toolsets:
- hermes-cli
- web
plugins:
  enabled:
  - livekit
  disabled: []
display:
  streaming: false   # the CLI's setting
  platforms:
    realtime:
      streaming: yes
    telegram:
      streaming: 'off'
personality: |
  streaming: true
  not a key of this file
tts:
  provider: openai
  streaming:
    completion_timeout: 45.5
  "quoted key": "a # not a comment"
platforms:
  realtime:
    enabled: true
    extra: {silence_duration: 0.7}
    api_key: \${HERMES_REALTIME_API_KEY}
`;

describe('the profile config.yaml reader', () => {
  const config = profileConfigFromText(HERMES_CONFIG, '/profiles/mira/config.yaml');

  it('reads nested mappings, YAML 1.1 booleans, numbers and quoted scalars', () => {
    expect(config.get('display.platforms.realtime.streaming')).toBe(true);
    expect(config.get('display.streaming')).toBe(false);
    expect(config.get('display.platforms.telegram.streaming')).toBe('off');
    expect(config.get('tts.streaming.completion_timeout')).toBe(45.5);
    expect(config.get('tts.quoted key')).toBe('a # not a comment');
    expect(config.get('platforms.realtime.enabled')).toBe(true);
    expect(config.get('platforms.realtime.api_key')).toBe('${HERMES_REALTIME_API_KEY}');
    expect(config.get('model.provider')).toBe('openai-codex');
  });

  it('reads it as YAML: lists are not taken, block scalars are text, flow mappings are mappings', () => {
    expect(config.get('toolsets')).toBeNull();
    expect(config.get('plugins.enabled')).toBeNull();
    expect(config.get('plugins.disabled')).toBeNull();
    // "streaming: true" inside the block scalar is text, not a top-level key.
    expect(config.get('personality')).toBe('streaming: true\nnot a key of this file\n');
    expect(config.get('streaming')).toBeUndefined();
    expect(config.get('platforms.realtime.extra.silence_duration')).toBe(0.7);
    expect(config.get('tts')).toMatchObject({ provider: 'openai' });
  });

  it('reads a file that is not valid YAML as empty', () => {
    const broken = profileConfigFromText('tts:\n  streaming: [unclosed\n', '/profiles/x/config.yaml');
    expect(broken.get('tts.streaming')).toBeUndefined();
  });

  it('answers undefined for a missing key, a path through a scalar and a prototype name', () => {
    expect(config.get('tts.streaming.missing')).toBeUndefined();
    expect(config.get('model.default.deeper')).toBeUndefined();
    expect(config.get('__proto__')).toBeUndefined();
    expect(config.get('toString')).toBeUndefined();
  });

  it('is found at HERMES_HOME, else ~/.hermes from the given environment only', () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'voice-profile-'));
    const profile = path.join(home, '.hermes', 'profiles', 'mira');
    mkdirSync(profile, { recursive: true });
    writeFileSync(path.join(profile, 'config.yaml'), 'tts:\n  streaming:\n    completion_timeout: 30\n');
    writeFileSync(path.join(home, '.hermes', 'config.yaml'), 'tts:\n  streaming:\n    completion_timeout: 60\n');
    expect(readProfileConfig({ HERMES_HOME: profile })?.get('tts.streaming.completion_timeout')).toBe(30);
    expect(readProfileConfig({ HOME: home })?.get('tts.streaming.completion_timeout')).toBe(60);
    expect(readProfileConfig({ HOME: home })?.file).toBe(path.join(home, '.hermes', 'config.yaml'));
    expect(readProfileConfig({ HERMES_HOME: path.join(home, 'nowhere') })).toBeNull();
    expect(hermesHome({})).toBeNull();
  });
});
