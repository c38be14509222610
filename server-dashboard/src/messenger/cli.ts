#!/usr/bin/env tsx
/**
 * `npm run messenger -- <command> [--profile NAME]`
 *   start    run the connector (WebSocket + inbox + Hermes turns) until SIGTERM/SIGINT
 *   staging  `start`, but only against Relay's staging origin with a separate RELAY_STATE_DIR
 *   status   configuration and inbox state (the Agent Token is never printed)
 *   backlog  the events still waiting for a successful turn
 */
import { HermesRunsBackend } from './hermes-runs-backend.js';
import { jsonLogger } from './clock.js';
import { MessengerConfigError, readMessengerConfig, type MessengerConfig } from './config.js';
import { MessengerConnector } from './connector.js';
import { MessengerFatalError } from './errors.js';
import { Inbox } from './inbox.js';
import { serveMessengerMetrics } from './metrics.js';
import { isSecondaryProfile, loadProfileSettings, profileHome } from './profile-settings.js';
import { stagingRefusal } from './staging.js';
import { RelayStateBindingError, tokenFingerprint } from './state-binding.js';

function argValue(args: string[], name: string): string | null {
  const i = args.indexOf(name);
  return i >= 0 ? (args[i + 1] ?? null) : null;
}

function loadConfig(args: string[]): MessengerConfig {
  const profile = argValue(args, '--profile') ?? process.env['HERMES_PROFILE'] ?? null;
  const home = profileHome(process.env, profile);
  const { env, extra, display } = loadProfileSettings(process.env, home, isSecondaryProfile(profile));
  return readMessengerConfig(env, home, extra, display);
}

async function start(config: MessengerConfig): Promise<number> {
  const log = jsonLogger();
  const agent = new HermesRunsBackend({ baseUrl: config.hermes.baseUrl, apiKey: config.hermes.apiKey });
  try {
    // Opening binds the state directory first: a changed token or origin stops here, before any work.
    const connector = MessengerConnector.start({
      config,
      agent,
      log,
      mediaRoot: process.env['RELAY_MEDIA_ROOT'] ?? null,
    });
    log.info('relay messenger connector started', {
      api_origin: config.relay.origin,
      state_dir: config.stateDir,
      pid: process.pid,
    });
    const metrics = config.metrics ? await serveMessengerMetrics({ inbox: connector.inbox, ...config.metrics }) : null;
    if (metrics) log.info('relay messenger metrics listening', { url: metrics.url });
    void connector.done.finally(() => metrics?.close());
    const shutdown = () => void connector.stop();
    process.once('SIGTERM', shutdown);
    process.once('SIGINT', shutdown);
    await connector.done;
    return 0;
  } catch (err) {
    if (err instanceof MessengerFatalError) {
      log.error('relay messenger connector stopped', { code: err.code, error: err.message });
      return 2;
    }
    throw err;
  }
}

function openReadOnly(config: MessengerConfig): Inbox {
  return Inbox.open({
    stateDir: config.stateDir,
    apiOrigin: config.relay.origin,
    agentToken: config.agentToken,
    readOnly: true,
  });
}

function status(config: MessengerConfig): number {
  const lines = [
    `api origin:        ${config.relay.origin}`,
    `websocket:         ${config.relay.websocketUrl}`,
    `agent token:       set (${tokenFingerprint(config.agentToken).slice(0, 19)}…)`,
    `state dir:         ${config.stateDir}`,
    `allowed contacts:  ${config.allowedContacts.size === 0 ? 'all' : [...config.allowedContacts].join(', ')}`,
    `group chat policy: ${config.groupChatPolicy}`,
    `approval admins:   ${config.groupApprovalAdmins.size === 0 ? 'none' : [...config.groupApprovalAdmins].join(', ')}`,
    `reply-to mode:     ${config.replyToMode}`,
    `busy input mode:   ${config.busyInputMode}`,
    `hermes api:        ${config.hermes.baseUrl}`,
  ];
  try {
    const inbox = openReadOnly(config);
    try {
      const b = inbox.backlog();
      const fs = inbox.fullSyncState();
      lines.push(
        `inbox:             bound to this token and origin`,
        `checkpoint:        ${inbox.checkpoint()}`,
        `full sync:         ${fs === null ? 'never' : `through ${fs.throughSequence} (${fs.chatCount} chats, ${fs.messageCount} messages)`}`,
        `events:            ${b.pending} pending, ${b.processing + b.dispatched} in progress, ${b.completed} completed, ${b.ignored} ignored, ${b.held} reactions held for the next turn`,
      );
    } finally {
      inbox.close();
    }
  } catch (err) {
    lines.push(`inbox:             ${(err as Error).message}`);
    console.log(lines.join('\n'));
    return err instanceof RelayStateBindingError ? 3 : 1;
  }
  console.log(lines.join('\n'));
  return 0;
}

function backlog(config: MessengerConfig): number {
  const inbox = openReadOnly(config);
  try {
    const b = inbox.backlog();
    console.log(`${b.pending + b.processing + b.dispatched} waiting (oldest ${b.oldestPendingAt ?? '-'})`);
    for (const r of inbox.pendingRows(100)) {
      console.log(`${r.eventId}  ${r.eventType.padEnd(18)}  ${r.status.padEnd(10)}  attempts=${r.attemptCount}`);
    }
  } finally {
    inbox.close();
  }
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== 'start' && command !== 'staging' && command !== 'status' && command !== 'backlog') {
    console.error('usage: messenger start|staging|status|backlog [--profile NAME]');
    return 64;
  }
  let config: MessengerConfig;
  try {
    config = loadConfig(rest);
  } catch (err) {
    if (err instanceof MessengerConfigError) {
      console.error(`messenger: ${err.message}`);
      return 78;
    }
    throw err;
  }
  if (command === 'staging') {
    const refusal = stagingRefusal(config);
    if (refusal !== null) {
      console.error(`messenger: ${refusal}`);
      return 78;
    }
    return start(config);
  }
  if (command === 'start') return start(config);
  try {
    return command === 'status' ? status(config) : backlog(config);
  } catch (err) {
    console.error(`messenger: ${(err as Error).message}`);
    return err instanceof RelayStateBindingError ? 3 : 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`messenger: ${(err as Error).message}`);
    process.exit(1);
  },
);
