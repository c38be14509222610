/**
 * The messenger connector: opens the bound inbox (before any work), rebuilds the chat index from the
 * last FULL-sync snapshot, runs the Relay WebSocket, and starts the inbox processor once Relay says
 * `ready` (or after 30 s without it, so committed work is never stranded by an outage).
 */
import type { AgentBackend } from './agent-backend.js';
import { ChatIndex } from './chat-index.js';
import { jsonLogger, systemClock, type Clock, type Logger, type Random } from './clock.js';
import type { MessengerConfig } from './config.js';
import { CronDelivery } from './cron-delivery.js';
import { MessengerFatalError } from './errors.js';
import { runFullSync } from './full-sync.js';
import { Inbox } from './inbox.js';
import { checkHermesVersion } from './hermes-version.js';
import { InboxProcessor } from './processor.js';
import { RelayApi } from './relay-api.js';
import { READY_TIMEOUT_MS, RelaySocket } from './relay-socket.js';
import { RelayStateBindingError } from './state-binding.js';

export interface ConnectorOptions {
  config: MessengerConfig;
  agent: AgentBackend;
  clock?: Clock;
  random?: Random;
  log?: Logger;
  fetch?: typeof fetch;
  mediaRoot?: string | null;
  /** Observes frames the connector sends (tests). */
  onSend?: (text: string) => void;
}

export class MessengerConnector {
  readonly inbox: Inbox;
  readonly processor: InboxProcessor;
  readonly socket: RelaySocket;
  readonly cron: CronDelivery;
  /** Settles once the supported-version check has logged its verdict (it never fails the start). */
  readonly versionChecked: Promise<unknown>;
  readonly index = new ChatIndex();
  /** Settles when the connector stops: resolves on stop(), rejects with MessengerFatalError. */
  readonly done: Promise<void>;
  private stopped = false;
  private fail!: (err: Error) => void;

  private constructor(options: ConnectorOptions) {
    const clock = options.clock ?? systemClock;
    const log = options.log ?? jsonLogger();
    const { config } = options;
    try {
      // Binding checks happen here, before any requeue or snapshot read.
      this.inbox = Inbox.open({
        stateDir: config.stateDir,
        apiOrigin: config.relay.origin,
        agentToken: config.agentToken,
      });
    } catch (err) {
      if (err instanceof RelayStateBindingError)
        throw new MessengerFatalError('relay_state_account_mismatch', err.message);
      throw err;
    }
    this.index.rebuild(this.inbox.snapshotChats(), this.inbox.snapshotMessages());
    const api = new RelayApi({
      origin: config.relay.origin,
      agentToken: config.agentToken,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    const failed = new Promise<never>((_, reject) => (this.fail = reject));
    failed.catch(() => {});
    this.processor = new InboxProcessor({
      inbox: this.inbox,
      api,
      agent: options.agent,
      index: this.index,
      clock,
      log,
      allowedContacts: config.allowedContacts,
      groupApprovalAdmins: config.groupApprovalAdmins,
      commands: config.commands,
      busyInputMode: config.busyInputMode,
      groupChatPolicy: config.groupChatPolicy,
      replyToMode: config.replyToMode,
      mediaRoot: options.mediaRoot ?? null,
      onFatal: (err) =>
        this.fail(
          err instanceof RelayStateBindingError
            ? new MessengerFatalError('relay_state_account_mismatch', err.message)
            : err,
        ),
    });
    // Cron outputs go out over REST and need no WebSocket session, so delivery starts at once.
    this.cron = new CronDelivery({
      hermesHome: config.hermesHome,
      homeChat: config.homeChat,
      inbox: this.inbox,
      api,
      clock,
      log,
    });
    this.cron.start();
    this.versionChecked = checkHermesVersion({ baseUrl: config.hermes.baseUrl, log });
    let processorStarted = false;
    const startProcessor = () => {
      if (processorStarted || this.stopped) return;
      processorStarted = true;
      this.processor.start();
    };
    const readyTimer = clock.setTimeout(startProcessor, READY_TIMEOUT_MS);
    this.socket = new RelaySocket({
      websocketUrl: config.relay.websocketUrl,
      agentToken: config.agentToken,
      clock,
      random: options.random ?? Math.random,
      log,
      ...(options.onSend ? { onSend: options.onSend } : {}),
      onReady: () => {
        readyTimer.cancel();
        startProcessor();
      },
      sink: {
        commit: (events) => {
          this.inbox.assertBound();
          this.inbox.acceptMany(events);
        },
        fullSync: async (through) => {
          const snapshot = await runFullSync(api, this.inbox, through);
          this.index.rebuild(snapshot.chats, snapshot.messages);
          log.info('relay FULL sync committed', {
            through: String(through),
            chats: snapshot.chats.length,
            messages: snapshot.messages.length,
          });
        },
        committed: () => this.processor.wake(),
      },
    });
    const socketRun = this.socket.run();
    this.done = Promise.race([socketRun, failed]).finally(async () => {
      readyTimer.cancel();
      this.socket.stop();
      await this.cron.stop();
      await this.processor.stop();
      this.inbox.close();
    });
  }

  static start(options: ConnectorOptions): MessengerConnector {
    return new MessengerConnector(options);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.socket.stop();
    await this.done.catch(() => {});
  }
}
