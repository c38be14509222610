import {
  E2E_AAD_TAG,
  E2E_ANSWER_PREFIX,
  E2E_MAX_ANSWER_CHARS,
  E2E_NONCE_BYTES,
  sealedAnswerPattern,
} from '@conduit/contracts/crypto/e2e';
import { decodeBase64Url, encodeBase64Url } from './base64url.js';
import type { E2eKeys } from './e2e-keys.js';
import { openChaCha20Poly1305, sealChaCha20Poly1305 } from './symmetric.js';

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Which question of which request of which pairing an answer belongs to; all of it is authenticated. */
export interface AnswerBinding {
  installationId: string;
  gatewayId: string;
  requestId: string;
  /** '' for a single answer, the qid for each entry of a batch's `answers`. */
  questionId: string;
}

/** The 7-line answer AAD (CRYPTO.md §1 "Clarify answers"). */
export function answerAad(kid: string, binding: AnswerBinding): string {
  return [
    E2E_AAD_TAG,
    'answer',
    `kid=${kid}`,
    `inst=${binding.installationId}`,
    `gw=${binding.gatewayId}`,
    `req=${binding.requestId}`,
    `qid=${binding.questionId}`,
  ].join('\n');
}

/**
 * Opens a sealed answer from the phone: `e2e1.<kid>.<nonce>.<ct>`. Returns the answer text, or null
 * when it must be rejected: plaintext, another kid, another request or question, a bad tag, or text
 * that is not UTF-8. An encrypted pairing accepts nothing else (the seed: "only accepts clarify answers
 * sealed by the phone").
 */
export function openSealedAnswer(sealed: unknown, keys: E2eKeys, binding: AnswerBinding): string | null {
  if (typeof sealed !== 'string' || sealed.length > E2E_MAX_ANSWER_CHARS || !sealedAnswerPattern.test(sealed)) {
    return null;
  }
  const [kid, nonceText, ctText] = sealed.slice(E2E_ANSWER_PREFIX.length).split('.');
  if (kid !== keys.kid || nonceText === undefined || ctText === undefined) return null;
  const nonce = decodeBase64Url(nonceText);
  const ct = decodeBase64Url(ctText);
  if (!nonce || nonce.length !== E2E_NONCE_BYTES || !ct || ct.length < 16) return null;
  const plain = openChaCha20Poly1305(keys.answer, nonce, answerAad(kid, binding), ct);
  if (!plain) return null;
  try {
    return strictUtf8.decode(plain);
  } catch {
    return null; // not UTF-8
  }
}

/** The answers of a decision poll, each opened under its own qid; null when any one is rejected. */
export function openSealedAnswers(
  answers: Record<string, unknown>,
  keys: E2eKeys,
  binding: Omit<AnswerBinding, 'questionId'>,
): Record<string, string> | null {
  const opened: Record<string, string> = {};
  for (const [qid, sealed] of Object.entries(answers)) {
    const text = openSealedAnswer(sealed, keys, { ...binding, questionId: qid });
    if (text === null) return null;
    opened[qid] = text;
  }
  return opened;
}

/** The phone's side: seals an answer for this host (used by tests and the e2e phone simulator). */
export function sealAnswer(answer: string, keys: E2eKeys, binding: AnswerBinding, nonce: Uint8Array): string {
  if (nonce.length !== E2E_NONCE_BYTES) throw new RangeError('the E2E nonce must be 12 bytes');
  const ct = sealChaCha20Poly1305(keys.answer, nonce, answerAad(keys.kid, binding), utf8.encode(answer));
  return `${E2E_ANSWER_PREFIX}${keys.kid}.${encodeBase64Url(nonce)}.${encodeBase64Url(ct)}`;
}
