import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/messenger/clock.js';
import { MessengerConnector } from '../../src/messenger/connector.js';
import { HermesRunsBackend } from '../../src/messenger/hermes-runs-backend.js';
import { judgeHermesVersion, parseHermesVersion } from '../../src/messenger/hermes-version.js';
import { HERMES_KEY, startFakes, type Fakes } from './harness.js';

let fakes: Fakes;
let connector: MessengerConnector | null = null;
const logged: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
const log: Logger = {
  info: (msg, fields = {}) => logged.push({ level: 'info', msg, fields }),
  warn: (msg, fields = {}) => logged.push({ level: 'warn', msg, fields }),
  error: (msg, fields = {}) => logged.push({ level: 'error', msg, fields }),
};

function start(): MessengerConnector {
  connector = MessengerConnector.start({
    config: fakes.config(),
    agent: new HermesRunsBackend({ baseUrl: fakes.hermes.url, apiKey: HERMES_KEY }),
    log,
  });
  return connector;
}

beforeEach(async () => {
  logged.length = 0;
  fakes = await startFakes();
});

afterEach(async () => {
  await connector?.stop();
  connector = null;
  await fakes.close();
});

describe('supported Hermes version check', () => {
  it('a newer minor than tested warns with the version and the connector keeps running', async () => {
    fakes.hermes.version = '0.22.0';
    const c = start();
    await expect(c.versionChecked).resolves.toBe('newer_minor');
    const warning = logged.find((l) => l.level === 'warn' && /newer than the versions/.test(l.msg));
    expect(warning?.fields).toMatchObject({ hermes_version: '0.22.0', supported: '0.19.0 through 0.21.3' });
    expect(c['stopped']).toBe(false);
  });

  it('a tested version logs no warning; an API server that reports none is noted, not refused', async () => {
    const c = start();
    await expect(c.versionChecked).resolves.toBe('supported');
    expect(logged.filter((l) => l.level === 'warn')).toEqual([]);
    await c.stop();
    fakes.hermes.version = null;
    await expect(start().versionChecked).resolves.toBe('unknown');
  });

  it('judges versions against 0.19.0 … 0.21.x', () => {
    expect(judgeHermesVersion(parseHermesVersion('0.21.9'))).toBe('supported');
    expect(judgeHermesVersion(parseHermesVersion('v0.19.0'))).toBe('supported');
    expect(judgeHermesVersion(parseHermesVersion('0.22.0.dev1'))).toBe('newer_minor');
    expect(judgeHermesVersion(parseHermesVersion('1.0.0'))).toBe('newer_minor');
    expect(judgeHermesVersion(parseHermesVersion('0.18.4'))).toBe('older');
    expect(judgeHermesVersion(parseHermesVersion('unknown'))).toBe('unknown');
  });
});
