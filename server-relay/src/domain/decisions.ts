import { FIXED_LIMITS } from '../limits.js';
import type { BatchQuestion } from './events.js';

/**
 * Parked clarify decisions (§3): the rules, pure over one record. The store persists records; the
 * routes decide with these functions.
 */
export interface DecisionRecord {
  /** `${installationId}:${gatewayId}:${requestId}`: the same request id from two gateways coexists. */
  key: string;
  installationId: string;
  gatewayId: string;
  requestId: string;
  question: string;
  choices: string[];
  questions: BatchQuestion[];
  /** qid → answer, batch decisions only. */
  answers: Record<string, string>;
  deliverable: boolean;
  createdAt: number;
  answer?: string;
  answeredAt?: number;
  cancelledAt?: number;
}

export function decisionKey(installationId: string, gatewayId: string, requestId: string): string {
  return `${installationId}:${gatewayId}:${requestId}`;
}

export function isExpired(decision: DecisionRecord, nowMs: number): boolean {
  return !Number.isFinite(decision.createdAt) || decision.createdAt + FIXED_LIMITS.decisionTtlMs <= nowMs;
}

export function remainingQids(decision: DecisionRecord): string[] {
  return decision.questions.map((question) => question.qid).filter((qid) => !Object.hasOwn(decision.answers, qid));
}

/** Active = still waiting for a person: not cancelled, and the answer (or some qid's) missing. */
export function isActive(decision: DecisionRecord): boolean {
  if (decision.cancelledAt !== undefined) return false;
  if (decision.questions.length > 0) return remainingQids(decision).length > 0;
  return decision.answer === undefined;
}

export type PollShape =
  | { status: 'unknown' }
  | { status: 'pending'; deliverable: boolean; remaining?: string[]; answers?: Record<string, string> }
  | { status: 'answered'; answer?: string; answers?: Record<string, string>; remaining?: string[] };

/** What the gateway's short poll sees. Released decisions read as unknown: the gateway already moved on. */
export function pollShape(decision: DecisionRecord | null, nowMs: number): PollShape {
  if (!decision || isExpired(decision, nowMs) || decision.cancelledAt !== undefined) return { status: 'unknown' };
  if (decision.questions.length > 0) {
    const remaining = remainingQids(decision);
    const answers = { ...decision.answers };
    if (remaining.length > 0) return { status: 'pending', deliverable: decision.deliverable, remaining, answers };
    return { status: 'answered', answers, remaining: [] };
  }
  if (decision.answer !== undefined) return { status: 'answered', answer: decision.answer };
  return { status: 'pending', deliverable: decision.deliverable };
}

export type AnswerOutcome =
  | { ok: true; decision: DecisionRecord; remaining?: string[] }
  | { ok: false; status: 400 | 409 | 410; code: 'invalid_question_id' | 'already_answered' | 'decision_released' };

/**
 * Applies one device answer. Scalar: first answer wins. Batch: first answer wins per qid; a missing
 * question_id targets the first qid (pre-batch app builds answer the collapsed first question).
 */
export function applyAnswer(
  decision: DecisionRecord,
  answer: string,
  questionId: string | undefined,
  nowMs: number,
): AnswerOutcome {
  if (decision.cancelledAt !== undefined) return { ok: false, status: 410, code: 'decision_released' };
  if (decision.questions.length === 0) {
    if (decision.answer !== undefined) return { ok: false, status: 409, code: 'already_answered' };
    return { ok: true, decision: { ...decision, answer, answeredAt: nowMs } };
  }
  const qid = questionId ?? decision.questions[0]?.qid;
  if (!qid || !decision.questions.some((question) => question.qid === qid)) {
    return { ok: false, status: 400, code: 'invalid_question_id' };
  }
  if (Object.hasOwn(decision.answers, qid)) return { ok: false, status: 409, code: 'already_answered' };
  const answers = { ...decision.answers, [qid]: answer };
  const next: DecisionRecord = { ...decision, answers };
  const remaining = remainingQids(next);
  if (remaining.length === 0) next.answeredAt = nowMs;
  return { ok: true, decision: next, remaining };
}

/**
 * Which decision a legacy answer (no gateway_id) means, among the installation's holders of the
 * request id: one live → it; several live → ambiguous; none live but one released → 410; all
 * settled → 409; none → 404.
 */
export function resolveLegacyTarget(holders: DecisionRecord[]):
  | { ok: true; decision: DecisionRecord }
  | {
      ok: false;
      status: 400 | 404 | 409 | 410;
      code: 'ambiguous_decision' | 'unknown_decision' | 'already_answered' | 'decision_released';
    } {
  const live = holders.filter(isActive);
  if (live.length === 1 && live[0]) return { ok: true, decision: live[0] };
  if (live.length > 1) return { ok: false, status: 400, code: 'ambiguous_decision' };
  if (holders.length === 0) return { ok: false, status: 404, code: 'unknown_decision' };
  if (holders.some((holder) => holder.cancelledAt !== undefined)) {
    return { ok: false, status: 410, code: 'decision_released' };
  }
  return { ok: false, status: 409, code: 'already_answered' };
}

/** Answers are kept whole when sealed by the phone (`e2e1.<kid>.<nonce>.<ct>`), else cleaned to 2,000 chars. */
const SEALED_ANSWER = /^e2e1\.[0-9a-f]{32}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22,10900}$/;

export function normalizeAnswer(
  value: unknown,
  cleanText: (v: unknown, max: number) => string | undefined,
): string | undefined {
  if (typeof value === 'string' && value.length <= 11_000 && SEALED_ANSWER.test(value)) return value;
  return cleanText(value, 2_000);
}
