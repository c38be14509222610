import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { hookString, type HookPayload } from '../bridge/hook-payload.js';
import type { Settlement } from '../delivery/outcome.js';
import type { RelayGateway, RelayTarget } from '../delivery/relay-gateway.js';
import { eventId } from '../notifier/event-id.js';
import {
  buildEvent,
  clarifyDecision,
  normaliseClarify,
  type ClarifyRequest,
  type NotificationEvent,
} from '../notifier/events.js';
import type { HookAnswer, ProfileScope } from '../notifier/notifier.js';
import { notificationTitle } from '../notifier/titles.js';
import { clarifyResult } from './clarify-answers.js';
import { awaitDecisionAnswer } from './decision-poll.js';

/** A paired profile's relay, plus how to open the phone's answers (sealed when E2E is on). */
export interface ClarifyPairing {
  target: RelayTarget;
  /** Opens the answers of a poll; null rejects them (an encrypted pairing takes only sealed answers). */
  openAnswers(requestId: string, answers: Record<string, unknown>, batch: boolean): Record<string, string> | null;
}

export interface ClarifyPorts {
  clock: Clock;
  log: Logger;
  pluginVersion: string;
  gateway: RelayGateway;
  readPairing(profile: ProfileScope): Promise<ClarifyPairing | null>;
  enqueueTracked(
    profile: ProfileScope,
    event: NotificationEvent,
    onSettled: (settlement: Settlement) => void,
  ): (() => void) | null;
  sessionTitle(profile: ProfileScope, sessionId: string): Promise<string | null>;
  /** Waits; injected so tests run the poll schedule without real time. */
  sleep(ms: number): Promise<void>;
  pollBaseMs: number;
  budgetMs: number;
}

type Held = { pairing: ClarifyPairing; requestId: string };

/**
 * Answerable clarify cards, out of process. Hermes runs our shell hook before its clarify tool; the
 * hook is held while the question (or the whole batch) is parked on the relay as a decision card and
 * polled for answers. Answers come back to Hermes as the hook's block message, in the built-in tool's
 * result shape. Whenever the card cannot work — not paired, not deliverable, released, budget spent —
 * the hook returns nothing and Hermes' native clarify runs; the parked decision is then released so a
 * late answer on the phone is refused rather than reported as accepted.
 */
export class ClarifyLoop {
  private readonly held = new Map<string, Held>();
  private closing = false;
  private wake: () => void = () => {};
  private readonly closed = new Promise<void>((resolve) => (this.wake = resolve));

  constructor(private readonly ports: ClarifyPorts) {}

  /**
   * The service is stopping: every held call returns at once (Hermes asks natively) and its parked
   * decision is released, so a shutdown never waits out a clarify budget.
   */
  shutdown(): void {
    this.closing = true;
    this.wake();
  }

  async ask(profile: ProfileScope, payload: HookPayload, isChild: boolean): Promise<HookAnswer> {
    if (isChild || this.closing) return null;
    const request = normaliseClarify(payload.tool_input);
    if (!request) return null;
    const pairing = await this.ports.readPairing(profile).catch(() => null);
    if (!pairing) return null;

    const requestId = `conduit-push-${randomBytes(6).toString('hex')}`;
    const sessionId = hookString(payload, 'session_id') ?? '';
    const toolCallId = hookString(payload, 'tool_call_id') ?? '';
    let title: string | undefined;
    if (sessionId) {
      const sessionTitle = await this.ports.sessionTitle(profile, sessionId).catch(() => null);
      title = notificationTitle('input.needed', sessionTitle, profile.name);
    }
    const decision = clarifyDecision(requestId, request);
    const event = buildEvent({
      eventId: eventId('input', hookString(payload, 'turn_id'), toolCallId, requestId),
      type: 'input.needed',
      pluginVersion: this.ports.pluginVersion,
      sessionId,
      profile: profile.name,
      title,
      body: decision.question,
      decision,
    });

    let firstSettlement: (value: Settlement) => void = () => {};
    const settled = new Promise<Settlement>((resolve) => (firstSettlement = resolve));
    const cancel = this.ports.enqueueTracked(profile, event, (s) => firstSettlement(s));
    if (!cancel) return null;
    const outcome = await settled;
    if (outcome.kind !== 'accepted') {
      // Not on the relay (yet): Hermes asks natively now, and the card must never show up later.
      cancel();
      this.release(pairing, requestId);
      this.ports.log.info('clarify card not delivered; native clarify', { outcome: outcome.kind });
      return null;
    }

    const key = toolCallId || requestId;
    this.held.set(key, { pairing, requestId });
    try {
      const answers = await this.collect(pairing, requestId, request.batch);
      if (!answers) {
        this.release(pairing, requestId);
        return null;
      }
      return { action: 'block', message: JSON.stringify(clarifyResult(request, answers)) };
    } finally {
      this.held.delete(key);
    }
  }

  /** Hermes' native clarify answered (post_tool_call): retire a card still parked for that call. */
  settledNatively(_profile: ProfileScope, payload: HookPayload): void {
    const key = hookString(payload, 'tool_call_id') ?? '';
    const held = key ? this.held.get(key) : undefined;
    if (held) this.release(held.pairing, held.requestId);
  }

  /** Fire and forget: a slow relay never delays Hermes' native answer. */
  private release(pairing: ClarifyPairing, requestId: string): void {
    void this.ports.gateway.releaseDecision(pairing.target, requestId).catch(() => false);
  }

  private async collect(
    pairing: ClarifyPairing,
    requestId: string,
    batch: boolean,
  ): Promise<Record<string, string> | null> {
    const poll = await awaitDecisionAnswer(this.ports, pairing.target, requestId, {
      budgetMs: this.ports.budgetMs,
      stop: this.closed,
      stopped: () => this.closing,
    });
    if (!poll) return null;
    const raw: Record<string, unknown> =
      batch && poll.answers && Object.keys(poll.answers).length ? poll.answers : { q0: poll.answer };
    const opened = pairing.openAnswers(requestId, raw, batch);
    if (!opened) {
      this.ports.log.warn('clarify answers rejected (not sealed for this pairing); native clarify');
      return null;
    }
    return opened;
  }
}

export type { ClarifyRequest };
