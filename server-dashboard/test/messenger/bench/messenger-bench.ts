/**
 * `npm run bench:messenger` — prints two figures (a script, not a test):
 *  1. inbound events committed and acknowledged per second, with a scripted instant agent;
 *  2. restart-to-first-replay with 10,000 pending rows in the inbox.
 * Both run the real connector (SQLite WAL, synchronous FULL) against the fake Relay server on
 * loopback, in this process.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { WebhookEnvelope } from '@conduit/contracts/messenger/envelope';
import { silentLogger } from '../../../src/messenger/clock.js';
import { MessengerConnector } from '../../../src/messenger/connector.js';
import { Inbox } from '../../../src/messenger/inbox.js';
import { instantReply, ScriptedAgentBackend } from '../../../src/messenger/scripted-agent.js';
import { inboundMessage } from '../fakes/fake-relay.js';
import { RELAY_TOKEN, startFakes, waitFor } from '../harness.js';

const EVENTS = Number(process.env['BENCH_EVENTS'] ?? 5_000);
const PENDING = Number(process.env['BENCH_PENDING'] ?? 10_000);

function messages(n: number, chats = 50): WebhookEnvelope[] {
  const cs = Array.from({ length: chats }, () => ({ chatId: randomUUID(), senderId: randomUUID() }));
  return Array.from(
    { length: n },
    (_, i) => inboundMessage({ ...cs[i % chats]!, text: `m${i}` }) as unknown as WebhookEnvelope,
  );
}

async function throughput(): Promise<number> {
  const fakes = await startFakes({ relay: { maxInFlight: 512 } });
  const agent = new ScriptedAgentBackend(instantReply('ok'));
  const connector = MessengerConnector.start({ config: fakes.config(), agent, log: silentLogger });
  await waitFor(() => fakes.relay.connections.length === 1, 30_000, 'connected');
  // Warm-up so module loading and statement preparation are not measured.
  fakes.relay.push(...(messages(200) as never[]));
  await waitFor(() => fakes.relay.ackedThrough === 200n, 60_000, 'warm-up');
  const batch = messages(EVENTS);
  const t0 = performance.now();
  fakes.relay.push(...(batch as never[]));
  await waitFor(() => fakes.relay.ackedThrough === BigInt(200 + EVENTS), 300_000, 'all acknowledged');
  const seconds = (performance.now() - t0) / 1000;
  await connector.stop();
  await fakes.close();
  return EVENTS / seconds;
}

async function restartToFirstReplay(): Promise<{ ms: number; drainedPerSecond: number }> {
  const fakes = await startFakes();
  const config = fakes.config();
  // Fill the inbox as a crashed connector would have left it.
  const inbox = Inbox.open({ stateDir: config.stateDir, apiOrigin: config.relay.origin, agentToken: RELAY_TOKEN });
  const rows = messages(PENDING);
  for (let i = 0; i < rows.length; i += 1000) {
    inbox.acceptMany(rows.slice(i, i + 1000).map((envelope, k) => ({ sequence: BigInt(i + k + 1), envelope })));
  }
  inbox.close();
  fakes.relay.ackedThrough = BigInt(PENDING);
  const agent = new ScriptedAgentBackend(instantReply('ok'));
  const t0 = performance.now();
  const connector = MessengerConnector.start({ config, agent, log: silentLogger });
  await waitFor(() => fakes.relay.messages.size >= 1, 60_000, 'first replayed reply');
  const ms = performance.now() - t0;
  const t1 = performance.now();
  await waitFor(() => fakes.relay.messages.size >= 1000, 120_000, '1,000 replays');
  const drainedPerSecond = (1000 - 1) / ((performance.now() - t1) / 1000);
  await connector.stop();
  await fakes.close();
  return { ms, drainedPerSecond };
}

const tp = await throughput();
console.log(
  `inbound events committed and acknowledged: ${tp.toFixed(0)} events/s (${EVENTS} message.received, instant agent; target >= 1,000/s)`,
);
const r = await restartToFirstReplay();
console.log(
  `restart to first replayed reply with ${PENDING} pending rows: ${r.ms.toFixed(0)} ms (target < 2,000 ms); replay drain ${r.drainedPerSecond.toFixed(0)} turns/s`,
);
console.log(
  `machine: ${path.basename(process.execPath)} ${process.version}, load average ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
process.exit(0);
