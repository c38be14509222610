import {
  e2eClarifyRouting,
  e2eEnvelope,
  requestIdPattern,
  type E2eClarifyRouting,
  type E2eEnvelope,
} from '@conduit/contracts/crypto/e2e';
import {
  CALL_KINDS as CONTRACT_CALL_KINDS,
  iatWithinWindow,
  PHONE_CHANGES_MODES,
  RELAY_EVENT_TYPES,
  type PhoneChangesMode,
  type RelayEventType,
} from '@conduit/contracts/relay/events';
import { cleanIdentifier, cleanText, isPlainObject } from './text.js';

/**
 * Validation of POST /v1/events bodies (§1.1). Validation returns a clean value or a wire error code;
 * handlers never see raw input. Unknown fields (dashboard_id, gateway_id…) are dropped: routing
 * identity comes only from the authenticated gateway.
 */

export const EVENT_TYPES = RELAY_EVENT_TYPES;
export type EventType = RelayEventType;
export type { PhoneChangesMode };

/**
 * Capability names of the event types this relay adds to the reference's (GET /v1/meta). The host
 * checks them before relying on a type; a relay without them answers 400 invalid_event_type.
 */
export const EVENT_CAPABILITIES = ['phone-changes-v1', 'location-push-v1'] as const;

const EVENT_ID = /^[A-Za-z0-9:_-]{8,128}$/;
const REQUEST_ID = requestIdPattern;
const QID = /^[A-Za-z0-9_-]+$/;
const RESERVED_QIDS = new Set(['__proto__', 'constructor', 'prototype']);
const CALL_ID = /^[A-Za-z0-9_-]{8,64}$/;
const APPROVAL_CHOICES = new Set(['once', 'session', 'always', 'deny']);
const CALL_KINDS = new Set<string>(CONTRACT_CALL_KINDS);

export interface BatchQuestion {
  qid: string;
  question: string;
  choices: string[];
  multi_select: boolean;
}

export interface ApprovalDecision {
  kind: 'approval';
  session_key: string;
  description: string;
  choices: string[];
  /**
   * Our extension (not in the reference): a host that names a request id gets the approval parked as
   * a scalar decision, so the phone can answer it through the decision routes like a clarify card.
   */
  request_id?: string;
}

export interface ClarifyDecision {
  kind: 'clarify';
  request_id: string;
  question: string;
  choices: string[];
  questions?: BatchQuestion[];
}

export interface CallRequest {
  id: string;
  kind: string;
  session_ids: string[];
  title?: string;
  reason?: string;
}

/** The sealed envelope and its parking descriptor are the contract's (contracts/src/crypto/e2e.ts). */
export type { E2eEnvelope };
export type E2eClarify = E2eClarifyRouting;

interface EventBase {
  type: EventType;
  eventId: string;
  /** Set on phone.changes only (alert when the body had none). */
  mode?: PhoneChangesMode;
  pluginVersion?: string;
  pluginCapabilities?: string[];
}

export interface PlainEvent extends EventBase {
  e2e?: undefined;
  title?: string;
  body?: string;
  sessionId?: string;
  profile?: string;
  gateway?: string;
  decision?: ApprovalDecision | ClarifyDecision;
  call?: CallRequest;
}

export interface SealedEvent extends EventBase {
  e2e: E2eEnvelope;
  clarify?: E2eClarify;
}

export type RelayEvent = PlainEvent | SealedEvent;

export type EventValidation = { ok: true; event: RelayEvent } | { ok: false; code: string };

/** The request id of the decision this event parks (a clarify, or an approval that names one), if any. */
export function parkedRequestId(event: RelayEvent): string | undefined {
  if (event.e2e) return event.clarify?.request_id;
  return event.decision?.request_id;
}

export function validateEvent(body: Record<string, unknown>, nowMs: number): EventValidation {
  const type = body.type;
  if (typeof type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(type)) {
    return { ok: false, code: 'invalid_event_type' };
  }
  const eventId = body.event_id;
  if (typeof eventId !== 'string' || !EVENT_ID.test(eventId)) return { ok: false, code: 'invalid_event_id' };
  const base: EventBase = { type: type as EventType, eventId };
  if (base.type === 'phone.changes') {
    // A routing field, not content: it applies to sealed events too. Absent means the visible kind,
    // so an older host that sends no mode never makes a change land silently.
    const mode = body.mode ?? 'alert';
    if (typeof mode !== 'string' || !(PHONE_CHANGES_MODES as readonly string[]).includes(mode)) {
      return { ok: false, code: 'invalid_mode' };
    }
    base.mode = mode as PhoneChangesMode;
  }
  const pluginVersion = cleanIdentifier(body.plugin_version, 40);
  if (pluginVersion) base.pluginVersion = pluginVersion;
  if (Array.isArray(body.plugin_capabilities)) {
    base.pluginCapabilities = body.plugin_capabilities
      .map((capability) => cleanIdentifier(capability, 40))
      .filter((capability): capability is string => capability !== undefined)
      .slice(0, 16);
  }
  if (body.e2e !== undefined) {
    // A malformed envelope is never delivered as plaintext: the sender asked for sealing.
    const envelope = validateEnvelope(body.e2e, eventId, nowMs);
    if (!envelope) return { ok: false, code: 'invalid_e2e' };
    const sealed: SealedEvent = { ...base, e2e: envelope };
    // `clarify` is the parking descriptor; a sealed approval that names a request id is parked the same way.
    if (body.clarify !== undefined && (base.type === 'input.needed' || base.type === 'approval.needed')) {
      const clarify = validateE2eClarify(body.clarify, envelope);
      if (!clarify) return { ok: false, code: 'invalid_e2e' };
      sealed.clarify = clarify;
    }
    return { ok: true, event: sealed };
  }
  // The relay must only ever see an opaque request id for a location query: never a plaintext one.
  if (base.type === 'location.request') return { ok: false, code: 'invalid_e2e' };
  const event: PlainEvent = { ...base };
  const title = cleanText(body.title, 120);
  if (title) event.title = title;
  const text = cleanText(body.body, 500);
  if (text) event.body = text;
  const sessionId = cleanIdentifier(body.session_id, 180);
  if (sessionId) event.sessionId = sessionId;
  const profile = cleanText(body.profile, 80);
  if (profile) event.profile = profile;
  const gateway = cleanIdentifier(body.gateway, 80);
  if (gateway) event.gateway = gateway;
  if (base.type === 'approval.needed') {
    const decision = validateApproval(body.decision);
    if (decision) event.decision = decision;
  } else if (base.type === 'input.needed') {
    const decision = validateClarify(body.decision);
    if (decision) event.decision = decision;
  } else if (base.type === 'call.requested') {
    const call = validateCall(body.call);
    if (call) event.call = call;
  }
  return { ok: true, event };
}

function validateApproval(value: unknown): ApprovalDecision | undefined {
  if (!isPlainObject(value) || value.kind !== 'approval') return undefined;
  const sessionKey = cleanIdentifier(value.session_key, 180);
  const description = cleanText(value.description, 500);
  const choices = Array.isArray(value.choices)
    ? [...new Set(value.choices.filter((choice): choice is string => APPROVAL_CHOICES.has(choice as string)))]
    : [];
  // Any missing part drops the card: the routing stub alone still reaches the phone.
  if (!sessionKey || !description || choices.length === 0) return undefined;
  const decision: ApprovalDecision = { kind: 'approval', session_key: sessionKey, description, choices };
  // A malformed request id only loses the parking: the card stays answerable through the host.
  if (typeof value.request_id === 'string' && REQUEST_ID.test(value.request_id)) decision.request_id = value.request_id;
  return decision;
}

function cleanChoices(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const out: string[] = [];
  for (const choice of value) {
    const cleaned = cleanText(choice, 80);
    if (cleaned && !out.includes(cleaned)) out.push(cleaned);
    if (out.length === 8) break;
  }
  return out;
}

/** A batch question id as the store keys it (never an Object prototype name). */
export function cleanQid(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const qid = value.trim();
  if (qid === '' || qid.length > 40 || !QID.test(qid) || RESERVED_QIDS.has(qid)) return undefined;
  return qid;
}

/** At most 8 questions, first of a duplicated qid wins, each with its own ≤8 choices. */
export function sanitizeBatchQuestions(value: unknown): BatchQuestion[] {
  if (!Array.isArray(value)) return [];
  const out: BatchQuestion[] = [];
  for (const entry of value) {
    if (out.length === 8) break;
    if (!isPlainObject(entry)) continue;
    const qid = cleanQid(entry.qid);
    const question = cleanText(entry.question, 500);
    if (!qid || !question || out.some((existing) => existing.qid === qid)) continue;
    out.push({ qid, question, choices: cleanChoices(entry.choices), multi_select: entry.multi_select === true });
  }
  return out;
}

function validateClarify(value: unknown): ClarifyDecision | undefined {
  if (!isPlainObject(value) || value.kind !== 'clarify') return undefined;
  // The request id is the key Hermes waits on, so it is never truncated: a bad one drops the card.
  if (typeof value.request_id !== 'string' || !REQUEST_ID.test(value.request_id)) return undefined;
  const question = cleanText(value.question, 500);
  if (!question) return undefined;
  const decision: ClarifyDecision = {
    kind: 'clarify',
    request_id: value.request_id,
    question,
    choices: cleanChoices(value.choices),
  };
  const questions = sanitizeBatchQuestions(value.questions);
  if (questions.length > 0) decision.questions = questions;
  return decision;
}

function validateCall(value: unknown): CallRequest | undefined {
  if (!isPlainObject(value)) return undefined;
  if (typeof value.id !== 'string' || !CALL_ID.test(value.id)) return undefined;
  if (typeof value.kind !== 'string' || !CALL_KINDS.has(value.kind)) return undefined;
  if (!Array.isArray(value.session_ids) || value.session_ids.length === 0) return undefined;
  const sessionIds: string[] = [];
  for (const candidate of value.session_ids) {
    // One bad id drops the whole call: a call that opens the wrong chat is worse than none.
    if (typeof candidate !== 'string' || candidate.length > 180) return undefined;
    const id = cleanIdentifier(candidate, 180);
    if (!id) return undefined;
    if (!sessionIds.includes(id)) sessionIds.push(id);
  }
  const call: CallRequest = { id: value.id, kind: value.kind, session_ids: sessionIds.slice(0, 4) };
  const title = cleanText(value.title, 120);
  if (title) call.title = title;
  const reason = cleanText(value.reason, 200);
  if (reason) call.reason = reason;
  return call;
}

/** The contract's envelope (kid, tok, nonce, ciphertext shapes), its `msg` bound to the event id, `iat` in the relay's window. */
function validateEnvelope(value: unknown, eventId: string, nowMs: number): E2eEnvelope | undefined {
  const parsed = e2eEnvelope.safeParse(value);
  if (!parsed.success || parsed.data.msg !== eventId || !iatWithinWindow(parsed.data.iat, nowMs)) return undefined;
  return parsed.data;
}

/** Absent qids read as [] and an absent card as true: hosts older than batch clarify send neither. */
const parkingDescriptor = e2eClarifyRouting.partial({ qids: true, card: true });

function validateE2eClarify(value: unknown, envelope: E2eEnvelope): E2eClarify | undefined {
  const parsed = parkingDescriptor.safeParse(value);
  if (!parsed.success || parsed.data.request_id !== envelope.req) return undefined;
  const qids = [...new Set(parsed.data.qids ?? [])];
  return { request_id: parsed.data.request_id, qids, card: parsed.data.card !== false };
}
