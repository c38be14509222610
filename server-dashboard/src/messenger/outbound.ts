/**
 * Shapes Hermes's answer into Relay Messages (PROTOCOL.md §8): silence tokens, Markdown stripping,
 * bubbles, lone-URL link Messages, text folding, per-POST batching, and the component parts lifted
 * by components.ts. Pure: the sender decides Idempotency-Keys and reply targets.
 */
import { liftComponents, type InvoiceSpec, type ReactionSpec } from './components.js';
import type { CreatePaymentRequest, MessagePart } from './relay-api.js';

/** Relay's text part limit, in UTF-16 code units. */
export const MAX_TEXT_UNITS = 10_000;
export const MAX_PARTS_PER_MESSAGE = 100;

export interface PlannedMessage {
  parts: MessagePart[];
}

export interface ReplyPlan {
  messages: PlannedMessage[];
  /** A payment request to create; its card is the final Message, alone. */
  payment: CreatePaymentRequest | null;
  /** An invoice block; sent after the words as the final Message (see sender). */
  invoice: InvoiceSpec | null;
  /** The agent's reaction to the message it answers (an answer may be nothing but a reaction). */
  reaction: ReactionSpec | null;
  refusals: string[];
}

const SILENCE = new Set(['[silent]', 'silent', 'no_reply', 'no reply', '[no reply]']);

export function isSilent(answer: string): boolean {
  return SILENCE.has(answer.trim().toLowerCase());
}

/** Markdown the messenger would show literally; kept when the answer has a code fence. */
export function stripMarkdown(text: string): string {
  if (text.includes('```')) return text;
  return text
    .replace(/^#{1,6}[ \t]+/gm, '')
    .replace(/\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)/g, '$1 ($2)')
    .replace(/\*\*([^*\n]+)\*\*/g, '$1')
    .replace(/__([^_\n]+)__/g, '$1')
    .replace(/(^|[^\w*])\*([^*\s][^*\n]*?)\*(?=[^\w*]|$)/gm, '$1$2')
    .replace(/`([^`\n]+)`/g, '$1');
}

/** Paragraphs split on blank lines that are not inside a ``` fence. */
export function splitBubbles(text: string): string[] {
  const lines = text.split('\n');
  const bubbles: string[] = [];
  let current: string[] = [];
  let inFence = false;
  for (const line of lines) {
    if (/^[ \t]*```/.test(line)) inFence = !inFence;
    if (!inFence && line.trim() === '') {
      if (current.length > 0) bubbles.push(current.join('\n'));
      current = [];
      continue;
    }
    current.push(line);
  }
  if (current.length > 0) bubbles.push(current.join('\n'));
  return bubbles
    .map((b) => b.trim())
    .filter((b) => b !== '')
    .flatMap(splitLong);
}

/** Splits a text over the limit, preferring a newline, then a space, never inside a surrogate pair. */
export function splitLong(text: string): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > MAX_TEXT_UNITS) {
    let at = rest.lastIndexOf('\n', MAX_TEXT_UNITS);
    if (at < MAX_TEXT_UNITS / 2) at = rest.lastIndexOf(' ', MAX_TEXT_UNITS);
    if (at < MAX_TEXT_UNITS / 2) {
      at = MAX_TEXT_UNITS;
      const code = rest.charCodeAt(at - 1);
      if (code >= 0xd800 && code <= 0xdbff) at -= 1;
    }
    out.push(rest.slice(0, at).trimEnd());
    rest = rest.slice(at).trimStart();
  }
  if (rest !== '') out.push(rest);
  return out;
}

export function isLoneUrl(bubble: string): boolean {
  if (bubble.length > 2048 || !/^https?:\/\/\S+$/.test(bubble)) return false;
  try {
    return new URL(bubble).hostname !== '';
  } catch {
    return false;
  }
}

/** Plans the Messages for one answer. */
export function planReply(answer: string): ReplyPlan {
  if (isSilent(answer)) return { messages: [], payment: null, invoice: null, reaction: null, refusals: [] };
  const lifted = liftComponents(answer);
  const bubbles = splitBubbles(stripMarkdown(lifted.text));

  // Fold adjacent text bubbles (a POST never carries two adjacent text parts) while they fit.
  type Piece = { kind: 'text'; value: string } | { kind: 'link'; value: string };
  const pieces: Piece[] = [];
  for (const bubble of bubbles) {
    if (isLoneUrl(bubble)) {
      pieces.push({ kind: 'link', value: bubble });
      continue;
    }
    const last = pieces[pieces.length - 1];
    if (last?.kind === 'text' && last.value.length + 2 + bubble.length <= MAX_TEXT_UNITS) {
      last.value = `${last.value}\n\n${bubble}`;
    } else {
      pieces.push({ kind: 'text', value: bubble });
    }
  }

  const messages: PlannedMessage[] = pieces.map((p) =>
    p.kind === 'link' ? { parts: [{ type: 'link', value: p.value }] } : { parts: [{ type: 'text', value: p.value }] },
  );
  // Buttons and a selection go beside the last text bubble; a selection may also go alone.
  const component = lifted.buttons ?? lifted.selection;
  if (component !== null) {
    let lastText = -1;
    messages.forEach((m, i) => {
      if (m.parts[0]?.type === 'text') lastText = i;
    });
    const target = messages[lastText];
    if (target !== undefined) target.parts.push(component);
    else messages.push({ parts: [component] });
  }
  return {
    messages,
    payment: lifted.payment,
    invoice: lifted.invoice,
    reaction: lifted.reaction,
    refusals: lifted.refusals,
  };
}
