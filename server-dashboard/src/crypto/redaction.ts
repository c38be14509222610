import { eventIdPrefix, hmacHex } from './e2e-keys.js';
import type {
  ApprovalDecision,
  CallRequest,
  ClarifyDecision,
  ClarifyQuestion,
  HostEvent,
} from '@conduit/contracts/relay/events';

/** The generic copy cards carry under `redact on` (seed, "Privacy and security"). */
export const REDACTED_APPROVAL_TEXT = 'Hermes needs your approval. Open Conduit for details.';
export const REDACTED_CLARIFY_TEXT = 'Hermes needs your answer. Open Conduit for details.';
const APPROVAL_CHOICES = new Set(['once', 'session', 'always', 'deny']);
const REDACT_KEY = /^[0-9a-f]{64}$/;

export function isRedactKey(value: unknown): value is string {
  return typeof value === 'string' && REDACT_KEY.test(value);
}

/**
 * Re-keys an event id so the relay can still dedupe retries but cannot link it to the turn or session
 * it was derived from: `prefix:<first 32 hex of HMAC-SHA256(redact_key as ASCII, event_id)>`.
 */
export function redactedEventId(redactKey: string, eventId: string): string {
  return `${eventIdPrefix(eventId)}:${hmacHex(new TextEncoder().encode(redactKey), eventId).slice(0, 32)}`;
}

/**
 * Rebuilds an event from allowlists so no chat text leaves the host (EVENTS.md §3): no title or body,
 * generic card text, and only what a card needs to stay answerable (session key or request id, qids,
 * choice labels — the answer is one of them).
 */
export function redactEvent(event: HostEvent, redactKey: string): HostEvent {
  const out: HostEvent = { event_id: redactedEventId(redactKey, event.event_id), type: event.type };
  if (event.plugin_version !== undefined) out.plugin_version = event.plugin_version;
  if (event.plugin_capabilities !== undefined) out.plugin_capabilities = event.plugin_capabilities;
  if (event.session_id !== undefined) out.session_id = event.session_id;
  if (event.profile !== undefined) out.profile = event.profile;
  if (event.gateway !== undefined) out.gateway = event.gateway;
  if (event.decision?.kind === 'approval') out.decision = redactApproval(event.decision);
  else if (event.decision?.kind === 'clarify') out.decision = redactClarify(event.decision);
  if (event.call) out.call = redactCall(event.call);
  return out;
}

function redactApproval(decision: ApprovalDecision): ApprovalDecision {
  const choices = decision.choices.filter((choice) => APPROVAL_CHOICES.has(choice));
  const out: ApprovalDecision = {
    kind: 'approval',
    description: REDACTED_APPROVAL_TEXT,
    session_key: decision.session_key,
    choices: choices.length > 0 ? choices : ['once', 'deny'],
  };
  if (decision.request_id) out.request_id = decision.request_id;
  return out;
}

function redactClarify(decision: ClarifyDecision): ClarifyDecision {
  const out: ClarifyDecision = { kind: 'clarify', question: REDACTED_CLARIFY_TEXT, request_id: decision.request_id };
  if (decision.choices) out.choices = decision.choices;
  if (decision.questions) {
    out.questions = decision.questions.map((question, index) => {
      const entry: ClarifyQuestion = { question: `Question ${index + 1}`, qid: question.qid };
      if (question.choices) entry.choices = question.choices;
      if (question.multi_select === true) entry.multi_select = true;
      return entry;
    });
  }
  return out;
}

function redactCall(call: CallRequest): CallRequest {
  return { id: call.id, kind: call.kind, session_ids: call.session_ids };
}
