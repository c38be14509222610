import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../src/messenger/clock.js';
import { MessengerConnector } from '../../src/messenger/connector.js';
import { HermesRunsBackend } from '../../src/messenger/hermes-runs-backend.js';
import { cronResponseText, relayTarget } from '../../src/messenger/cron-delivery.js';
import { HERMES_KEY, startFakes, waitFor, type Fakes } from './harness.js';

let fakes: Fakes;
let connector: MessengerConnector | null = null;
let logged: { msg: string; fields: Record<string, unknown> }[] = [];

const log: Logger = {
  info: (msg, fields = {}) => logged.push({ msg, fields }),
  warn: (msg, fields = {}) => logged.push({ msg, fields }),
  error: (msg, fields = {}) => logged.push({ msg, fields }),
};

const HOME_CHAT = randomUUID();

function hermesHome(): string {
  return path.dirname(fakes.stateDir);
}

function start(): MessengerConnector {
  connector = MessengerConnector.start({
    config: fakes.config({ RELAY_HOME_CHAT: HOME_CHAT }),
    agent: new HermesRunsBackend({ baseUrl: fakes.hermes.url, apiKey: HERMES_KEY }),
    log,
  });
  return connector;
}

function writeJobs(jobs: { id: string; name: string; deliver: unknown }[]): void {
  fs.mkdirSync(path.join(hermesHome(), 'cron', 'output'), { recursive: true });
  fs.writeFileSync(path.join(hermesHome(), 'cron', 'jobs.json'), JSON.stringify({ jobs }));
}

/** Writes a run's output as Hermes' scheduler does: a temporary file renamed into place. */
function writeOutput(jobId: string, stamp: string, response: string): string {
  const dir = path.join(hermesHome(), 'cron', 'output', jobId);
  fs.mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `.output_${randomUUID()}.tmp`);
  fs.writeFileSync(
    tmp,
    `# Cron Job: ${jobId}\n\n**Job ID:** ${jobId}\n\n## Prompt\n\nsummarise\n\n## Response\n\n${response}\n`,
  );
  fs.renameSync(tmp, path.join(dir, `${stamp}.md`));
  return `${jobId}/${stamp}.md`;
}

function delivered(key: string) {
  return logged.find((l) => l.msg === 'relay cron output delivered' && l.fields['output'] === key);
}

beforeEach(async () => {
  logged = [];
  fakes = await startFakes();
});

afterEach(async () => {
  await connector?.stop();
  connector = null;
  await fakes.close();
});

describe('cron delivery to RELAY_HOME_CHAT', () => {
  it('a new output of a relayapp job is sent once to the home chat, and not again after a restart', async () => {
    writeJobs([{ id: 'daily', name: 'Daily brief', deliver: 'relayapp' }]);
    const c = start();
    const key = writeOutput('daily', '2026-12-04_07-00-00', 'Three meetings today.');
    await waitFor(() => delivered(key), 10_000, 'the cron output delivered');
    const sent = [...fakes.relay.messages.values()].filter((m) => m.idempotencyKey?.startsWith('cron-'));
    expect(sent).toHaveLength(1);
    expect(sent[0]?.chatId).toBe(HOME_CHAT);
    expect(JSON.stringify(sent[0]?.body)).toContain('Three meetings today.');
    expect(JSON.stringify(sent[0]?.body)).not.toContain('## Prompt');

    await c.stop();
    logged = [];
    const again = start();
    // A second output written after the restart proves the restarted watcher scanned past the first.
    const next = writeOutput('daily', '2026-12-04_08-00-00', 'One meeting moved.');
    await waitFor(() => delivered(next), 10_000, 'the second output delivered');
    expect(delivered(key)).toBeUndefined();
    expect(again.inbox.cronOutputSettled(key)).toBe(true);
    expect([...fakes.relay.messages.values()].filter((m) => m.idempotencyKey?.startsWith('cron-'))).toHaveLength(2);
  });

  it('relayapp:<chat> sends to that chat; a job delivering to another platform sends nothing', async () => {
    const other = randomUUID();
    writeJobs([
      { id: 'tg', name: 'Telegram job', deliver: 'telegram:12345' },
      { id: 'named', name: 'Named chat', deliver: `relayapp:${other}` },
    ]);
    start();
    const skipped = writeOutput('tg', '2026-12-04_07-00-00', 'for telegram only');
    // Written second, so its delivery means the scan already passed the telegram job's output.
    const key = writeOutput('named', '2026-12-04_07-00-01', 'for the named chat');
    await waitFor(() => delivered(key), 10_000, 'the named-chat output delivered');
    const sent = [...fakes.relay.messages.values()].filter((m) => m.idempotencyKey?.startsWith('cron-'));
    expect(sent.map((m) => m.chatId)).toEqual([other]);
    expect(connector?.inbox.cronOutputSettled(skipped)).toBe(false);
  });

  it('outputs written before the connector first watched are history and are never sent', async () => {
    writeJobs([{ id: 'daily', name: 'Daily brief', deliver: 'relayapp' }]);
    const old = writeOutput('daily', '2026-01-01_07-00-00', 'last January');
    const past = new Date(Date.now() - 86_400_000);
    fs.utimesSync(path.join(hermesHome(), 'cron', 'output', old), past, past);
    start();
    const key = writeOutput('daily', '2026-12-04_07-00-00', 'today');
    await waitFor(() => delivered(key), 10_000, 'the new output delivered');
    expect(delivered(old)).toBeUndefined();
    expect([...fakes.relay.messages.values()].filter((m) => m.idempotencyKey?.startsWith('cron-'))).toHaveLength(1);
  });

  it("reads Hermes' deliver forms and the response section", () => {
    expect(relayTarget('relayapp')).toEqual({ chat: 'home' });
    expect(relayTarget('telegram,relayapp:c1')).toEqual({ chat: 'c1' });
    expect(relayTarget(['origin', 'relayapp'])).toEqual({ chat: 'home' });
    expect(relayTarget('local')).toBeNull();
    expect(relayTarget('relayappx')).toBeNull();
    expect(cronResponseText('# Cron Job: x\n\n## Prompt\n\np\n\n## Response\n\nthe answer\n')).toBe('the answer');
  });
});
