import type { ApprovalDecision, CallRequest, ClarifyDecision, ClarifyQuestion } from '@conduit/contracts/relay/events';
import { BODY_MAX, TITLE_MAX, clean } from './text.js';
import type { NotificationType } from './titles.js';

/** One notification as the host hands it to the delivery queue (before redaction and sealing). */
export interface NotificationEvent {
  event_id: string;
  type: NotificationType;
  plugin_version: string;
  plugin_capabilities: string[];
  session_id?: string;
  profile?: string;
  title?: string;
  body?: string;
  decision?: ApprovalDecision | ClarifyDecision;
  /** The call of a `call.requested` event: its id, how the job ended, the chats to open. */
  call?: CallRequest;
}

/** What this host tells the relay it can do, on every event. */
export const PLUGIN_CAPABILITIES = [
  'approval-decisions',
  'clarify-loop',
  'batch-clarify-decisions',
  'version-reporting',
  'e2e-v1',
  'hermes-calls',
] as const;

export const MAX_QUESTIONS = 8;
export const MAX_CHOICES = 8;
const CHOICE_MAX = 80;
const QID = /^[A-Za-z0-9_-]+$/;
const RESERVED_QIDS = new Set(['__proto__', 'constructor', 'prototype']);

export function buildEvent(fields: {
  eventId: string;
  type: NotificationType;
  pluginVersion: string;
  sessionId?: string | undefined;
  profile?: string | undefined;
  title?: string | undefined;
  body?: string | undefined;
  decision?: ApprovalDecision | ClarifyDecision | undefined;
}): NotificationEvent {
  const event: NotificationEvent = {
    event_id: fields.eventId,
    type: fields.type,
    plugin_version: fields.pluginVersion,
    plugin_capabilities: [...PLUGIN_CAPABILITIES],
  };
  const sessionId = clean(fields.sessionId ?? '', 180);
  const profile = clean(fields.profile ?? '', 80);
  const title = clean(fields.title ?? '', TITLE_MAX);
  const body = clean(fields.body ?? '', BODY_MAX);
  if (sessionId) event.session_id = sessionId;
  if (profile) event.profile = profile;
  if (title) event.title = title;
  if (body) event.body = body;
  if (fields.decision) event.decision = fields.decision;
  return event;
}

function cleanChoices(raw: unknown, dedupe: boolean): string[] {
  if (!Array.isArray(raw)) return [];
  const out: string[] = [];
  for (const item of raw) {
    const choice = clean(typeof item === 'string' ? item : '', CHOICE_MAX);
    if (!choice || (dedupe && out.includes(choice))) continue;
    out.push(choice);
    if (out.length === MAX_CHOICES) break;
  }
  return out;
}

export function approvalDecision(sessionKey: string, description: string): ApprovalDecision | undefined {
  const key = clean(sessionKey, 500);
  const text = clean(description, 500);
  if (!key || !text) return undefined;
  return { kind: 'approval', session_key: key, description: text, choices: ['once', 'deny'] };
}

/**
 * Hermes' clarify arguments normalised to a batch: the questions[] protocol (qids kept, q0…q7
 * given where missing) or the scalar question/choices. Null when there is nothing to ask.
 */
export interface ClarifyRequest {
  batch: boolean;
  questions: ClarifyQuestion[];
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

export function normaliseClarify(args: unknown): ClarifyRequest | null {
  const record = asRecord(args);
  if (!record) return null;
  if (Array.isArray(record.questions)) {
    const questions: ClarifyQuestion[] = [];
    const seen = new Set<string>();
    record.questions.forEach((raw, index) => {
      if (questions.length === MAX_QUESTIONS) return;
      const entry = typeof raw === 'string' ? { question: raw } : asRecord(raw);
      if (!entry) return;
      const question = clean(entry.question ?? entry.prompt, 500);
      if (!question) return;
      const given = clean(entry.qid ?? entry.id, 40);
      const qid = given && QID.test(given) && !RESERVED_QIDS.has(given) ? given : `q${index}`;
      if (seen.has(qid)) return;
      seen.add(qid);
      const choices = cleanChoices(entry.choices ?? entry.options, true);
      const item: ClarifyQuestion = { qid, question };
      if (choices.length) item.choices = choices;
      if (entry.multi_select === true) item.multi_select = true;
      questions.push(item);
    });
    return questions.length ? { batch: true, questions } : null;
  }
  const question = clean(record.question ?? record.prompt ?? record.message, 500);
  if (!question) return null;
  const choices = cleanChoices(record.choices ?? record.options, true);
  const item: ClarifyQuestion = { qid: 'q0', question };
  if (choices.length) item.choices = choices;
  return { batch: false, questions: [item] };
}

export function clarifyDecision(requestId: string, request: ClarifyRequest): ClarifyDecision {
  const first = request.questions[0];
  const decision: ClarifyDecision = { kind: 'clarify', request_id: requestId, question: first?.question ?? '' };
  if (first?.choices?.length) decision.choices = [...first.choices];
  if (request.batch) decision.questions = request.questions.map((q) => ({ ...q }));
  return decision;
}

/** The banner text for a clarify call: its question, else the first of a batch, else generic copy. */
export function clarificationText(args: unknown): string {
  const record = asRecord(args);
  const direct = record ? clean(record.question ?? record.prompt ?? record.message, 500) : '';
  if (direct) return direct;
  const first = record && Array.isArray(record.questions) ? record.questions[0] : undefined;
  const firstText = typeof first === 'string' ? first : (asRecord(first)?.question ?? asRecord(first)?.prompt);
  return clean(firstText, 500) || 'Hermes needs your response before it can continue.';
}
