import type { ClarifyQuestion } from '@conduit/contracts/relay/events';
import type { ClarifyRequest } from '../notifier/events.js';

/** Hermes marks a suggested choice "(recommended)"; the answer Hermes gets back is the bare choice. */
export function stripRecommended(text: string): string {
  return text.replace(/\s*\((?:recommended)\)\s*$/i, '').trim();
}

/** A multi-select answer arrives as a JSON array or as comma-separated text; Hermes wants a list. */
export function parseMultiSelect(answer: string): string[] {
  const trimmed = answer.trim();
  if (trimmed.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (Array.isArray(parsed)) return parsed.map((item) => stripRecommended(String(item))).filter(Boolean);
    } catch {
      // not JSON: read it as CSV
    }
  }
  return trimmed
    .split(',')
    .map((item) => stripRecommended(item))
    .filter(Boolean);
}

export interface ScalarResult {
  question: string;
  choices_offered: string[];
  user_response: string;
}

export interface BatchEntry {
  id: string;
  question: string;
  choices_offered: string[];
  user_response: string | string[];
}

/**
 * The relay's answers in the shape Hermes' built-in clarify tool returns, so the model reads the same
 * result either way: a scalar call gets {question, choices_offered, user_response}; a questions[]
 * call (even one entry) gets {responses: [...]} in the order asked, multi-select answers as lists.
 */
export function clarifyResult(
  request: ClarifyRequest,
  answers: Record<string, string>,
): ScalarResult | { responses: BatchEntry[] } {
  const response = (q: ClarifyQuestion): string | string[] => {
    const raw = answers[q.qid] ?? '';
    return q.multi_select ? parseMultiSelect(raw) : stripRecommended(raw);
  };
  if (!request.batch) {
    const q = request.questions[0];
    const answer = q ? response(q) : '';
    return {
      question: q?.question ?? '',
      choices_offered: q?.choices ?? [],
      user_response: Array.isArray(answer) ? answer.join(', ') : answer,
    };
  }
  return {
    responses: request.questions.map((q) => ({
      id: q.qid,
      question: q.question,
      choices_offered: q.choices ?? [],
      user_response: response(q),
    })),
  };
}

/** Poll delays: 2, 4, 8, 10, 10… seconds from a 2 s base (scaled with the configured base). */
export function pollDelayMs(step: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, step), baseMs * 5);
}
