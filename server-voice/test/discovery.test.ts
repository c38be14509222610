import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVoiceClient } from '@conduit/sdk/voice';
import { buildApp } from '../src/app.js';
import { ConfigError, loadConfig, profileFromHermesHome, voiceConfig } from '../src/config.js';

let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
  app = await buildApp(voiceConfig({ apiKey: 'test-key', profile: 'kitchen' }));
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

describe('GET /v1/realtime/discovery', () => {
  it('answers the profile to a caller with the bearer token, through the generated client', async () => {
    const voice = createVoiceClient({ baseUrl, headers: { authorization: 'Bearer test-key' } });
    const { data, response } = await voice.GET('/v1/realtime/discovery');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(data).toMatchObject({ version: 1, profile: 'kitchen', realtime_path: '/v1/realtime/calls' });
    // Which speech providers answer and from where (test/providers/hermes-speech.test.ts covers the sources).
    expect(data).toHaveProperty('speech.stt', expect.objectContaining({ source: 'fallback', provider: 'stand-in' }));
    expect(data).toHaveProperty('speech.tts', expect.objectContaining({ source: 'fallback', provider: 'espeak' }));
  });

  it('answers 401 unauthorized without the token or with a wrong one', async () => {
    const anonymous = createVoiceClient({ baseUrl });
    const missing = await anonymous.GET('/v1/realtime/discovery');
    expect(missing.response.status).toBe(401);
    const wrong = await fetch(`${baseUrl}/v1/realtime/discovery`, { headers: { authorization: 'Bearer test-kez' } });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toBe('unauthorized');
  });
});

describe('CORS on discovery and on every error', () => {
  const readable = { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'Location' };
  const expectReadable = (response: Response) => {
    for (const [name, value] of Object.entries(readable)) expect(response.headers.get(name)).toBe(value);
  };

  it('answers a preflight for discovery and lets any origin read its 200 and 401', async () => {
    const preflight = await fetch(`${baseUrl}/v1/realtime/discovery`, {
      method: 'OPTIONS',
      headers: { 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    });
    expect(preflight.status).toBe(204);
    expectReadable(preflight);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('authorization');
    const ok = await fetch(`${baseUrl}/v1/realtime/discovery`, { headers: { authorization: 'Bearer test-key' } });
    expect(ok.status).toBe(200);
    expectReadable(ok);
    const refused = await fetch(`${baseUrl}/v1/realtime/discovery`);
    expect(refused.status).toBe(401);
    expectReadable(refused);
  });

  it('carries the CORS headers on answers from no route at all (404, 405-like misses)', async () => {
    const missing = await fetch(`${baseUrl}/v1/realtime/nothing-here`);
    expect(missing.status).toBe(404);
    expectReadable(missing);
    const wrongMethod = await fetch(`${baseUrl}/v1/realtime/calls`, { method: 'DELETE' });
    expect(wrongMethod.status).toBe(404);
    expectReadable(wrongMethod);
  });
});

describe('configuration', () => {
  it('fails closed when no API key is configured', () => {
    expect(() => loadConfig({})).toThrow(ConfigError);
    expect(() => loadConfig({ HERMES_REALTIME_API_KEY: '   ' })).toThrow(/HERMES_REALTIME_API_KEY/);
  });

  it('names the profile from HERMES_HOME only for a valid profiles/<name> folder', () => {
    expect(profileFromHermesHome('/home/u/.hermes/profiles/kitchen')).toBe('kitchen');
    expect(profileFromHermesHome('/home/u/.hermes/profiles/Kitchen')).toBe('default');
    expect(profileFromHermesHome('/home/u/.hermes')).toBe('default');
    expect(profileFromHermesHome(undefined)).toBe('default');
  });
});
