import { GPT_LIVE_VOICE_PATTERN } from '@conduit/contracts/dashboard/gpt-live';
import { DetailError } from '../detail-errors.js';

/** The session route's field bounds (ROUTES.md, GPT-Live). */
const LIMITS = {
  /** The newest items are what the model needs to carry on; older ones only cost setup time. */
  historyItems: 40,
  briefingMaxChars: 32_768,
  /** A greeting is one short sentence the model says aloud. */
  greetingMaxChars: 200,
  /** A raw greeting is refused before normalising past this, so a huge field is never processed. */
  greetingRawMaxChars: 800,
} as const;

/** A session request once every field has passed the reference's rules. */
export interface SessionRequest {
  sdp: string;
  /** At most the last 40 items, as sent. */
  history: Record<string, unknown>[];
  /** The lowercased voice asked for, or undefined for the configured one. */
  voice: string | undefined;
  /** The trimmed briefing, or undefined when none (or only whitespace) was sent. */
  briefing: string | undefined;
  /** The normalised greeting (`""` greets without set words), or undefined: the model waits for the user. */
  greeting: string | undefined;
  callOpening: boolean;
  billing: 'subscription' | 'api';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Absent and JSON null mean the same for an optional field. */
function given(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/**
 * The reference's greeting normalising: `"` becomes `'` (the greeting is quoted inside the
 * instructions), characters that are not printable — controls, format characters and separators other
 * than the plain space, as Python's `str.isprintable` judges — become spaces, and whitespace collapses.
 */
export function normaliseGreeting(text: string): string {
  return text
    .replace(/"/g, "'")
    .replace(/[\p{C}\p{Z}]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

function historyOf(value: unknown): Record<string, unknown>[] {
  if (!given(value)) return [];
  if (!Array.isArray(value) || !value.every(isObject)) {
    throw new DetailError(400, 'history must be a list of conversation items');
  }
  return value.slice(-LIMITS.historyItems);
}

function voiceOf(value: unknown): string | undefined {
  if (!given(value)) return undefined;
  const voice = typeof value === 'string' ? value.trim().toLowerCase() : '';
  if (!GPT_LIVE_VOICE_PATTERN.test(voice)) throw new DetailError(400, 'voice must be a voice name such as cove');
  return voice;
}

function briefingOf(value: unknown): string | undefined {
  if (!given(value)) return undefined;
  if (typeof value !== 'string') throw new DetailError(400, 'briefing must be text');
  const briefing = value.trim();
  if (briefing.length > LIMITS.briefingMaxChars) throw new DetailError(400, 'briefing is too long');
  return briefing || undefined;
}

function greetingOf(value: unknown): string | undefined {
  if (!given(value)) return undefined;
  if (typeof value !== 'string') throw new DetailError(400, 'greeting must be text');
  if (value.length > LIMITS.greetingRawMaxChars) throw new DetailError(400, 'greeting is too long');
  const greeting = normaliseGreeting(value);
  if (greeting.length > LIMITS.greetingMaxChars) throw new DetailError(400, 'greeting is too long');
  return greeting;
}

function callOpeningOf(value: unknown): boolean {
  if (!given(value)) return false;
  if (typeof value !== 'boolean') throw new DetailError(400, 'call_opening must be true or false');
  return value;
}

/**
 * Billing is named by the app, never inferred: absent (every app before API billing) or `subscription`
 * bills the subscription, `api` the API key, anything else is refused rather than guessed.
 */
function billingOf(value: unknown): 'subscription' | 'api' {
  if (!given(value) || value === 'subscription') return 'subscription';
  if (value === 'api') return 'api';
  throw new DetailError(400, 'billing must be "subscription" or "api"');
}

/** Validates a session body (already parsed JSON) field by field, in the reference's order. */
export function validSessionRequest(body: unknown): SessionRequest {
  if (!isObject(body)) throw new DetailError(400, 'Request body must be a JSON object');
  if (typeof body.sdp !== 'string' || !body.sdp.startsWith('v=0')) {
    throw new DetailError(400, 'sdp must be a WebRTC SDP offer');
  }
  return {
    sdp: body.sdp,
    history: historyOf(body.history),
    voice: voiceOf(body.voice),
    briefing: briefingOf(body.briefing),
    greeting: greetingOf(body.greeting),
    callOpening: callOpeningOf(body.call_opening),
    billing: billingOf(body.billing),
  };
}
