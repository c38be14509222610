/**
 * Interactive components (PROTOCOL.md §9): fenced blocks at the end of the model's answer are
 * lifted into Relay parts. A block the server would refuse stays in the words and the reason is
 * returned for the log, so nothing Hermes wrote is lost. Lengths are UTF-16 code units (JS string
 * length), as Relay measures them.
 */
import type { CreatePaymentRequest, MessagePart } from './relay-api.js';

export type ButtonsPart = Extract<MessagePart, { type: 'buttons' }>;
export type SelectionPart = Extract<MessagePart, { type: 'selection' }>;

export interface InvoiceSpec {
  title: string;
  amount: number;
  currency: string;
  goods: 'physical' | 'digital';
  url: string;
  recurring?: { interval: 'day' | 'week' | 'month' | 'year'; interval_count: number };
}

/** The six standard tapbacks of the locked contract's ReactionType, besides `custom`. */
export const TAPBACKS = ['love', 'like', 'dislike', 'laugh', 'emphasize', 'question'] as const;
export type Tapback = (typeof TAPBACKS)[number];

export type ReactionSpec = { type: Tapback } | { type: 'custom'; custom_emoji: string };

/**
 * Blocks the newest reference adapter lifts that the locked contract (b1e534c0) cannot carry: its
 * MessagePart is text, media, link, buttons, selection, selection_response and payment only, so
 * Relay would refuse any of these parts. They stay in the words, with the reason logged.
 */
export const UNSENDABLE_BLOCKS = ['rating_request', 'form', 'place', 'rich_card', 'carousel'] as const;

export interface LiftedComponents {
  /** The words, with every lifted block removed. */
  text: string;
  buttons: ButtonsPart | null;
  selection: SelectionPart | null;
  payment: CreatePaymentRequest | null;
  invoice: InvoiceSpec | null;
  /** A reaction of the agent to the message it answers (sent through the reaction route). */
  reaction: ReactionSpec | null;
  /** Why a block stayed in the words (logged, never sent). */
  refusals: string[];
}

const BUTTONS_BLOCK = /(^|\n)[ \t]*```[ \t]*buttons[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```[ \t]*(?=\r?\n|$)/;
const SELECTION_BLOCK =
  /(^|\n)[ \t]*```[ \t]*selection(?:[ \t]+[^\r\n]*)?[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```[ \t]*(?=\r?\n|$)/g;
const ANY_BUTTONS_FENCE = /(^|\n)[ \t]*```[ \t]*buttons(?:[ \t]+[^\r\n]*)?[ \t]*\r?\n/;
const REACTION_BLOCK = /(^|\n)[ \t]*```[ \t]*reaction[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```[ \t]*(?=\r?\n|$)/g;
const ANY_SELECTION_FENCE = /(^|\n)[ \t]*```[ \t]*selection(?:[ \t]+[^\r\n]*)?[ \t]*\r?\n/;

export const SELECTION_VALUE = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const HTTP_URL = /^https?:\/\/[^\s]+$/;
export const STRIPE_HOSTS = new Set([
  'checkout.stripe.com',
  'buy.stripe.com',
  'book.stripe.com',
  'donate.stripe.com',
  'invoice.stripe.com',
]);

/** Removes `match` from `text`: before.rstrip() + "\n\n" + after.lstrip(), or whichever is non-empty. */
function cut(text: string, index: number, length: number): string {
  const before = text.slice(0, index).trimEnd();
  const after = text.slice(index + length).trimStart();
  if (before !== '' && after !== '') return `${before}\n\n${after}`;
  return before !== '' ? before : after;
}

function parseJson(body: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(body) as unknown };
  } catch {
    return { ok: false };
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function validateButtons(body: string): { part: ButtonsPart } | { error: string } {
  const parsed = parseJson(body);
  if (!parsed.ok) return { error: 'the buttons block is not valid JSON' };
  let items: unknown = parsed.value;
  if (isRecord(items)) items = items['items'];
  if (!Array.isArray(items) || items.length === 0) return { error: 'the buttons block has no items' };
  if (items.length > 5) return { error: `the buttons block has ${items.length} items; the most is 5` };
  const out: ButtonsPart['items'] = [];
  for (const [i, item] of items.entries()) {
    const n = i + 1;
    if (!isRecord(item)) return { error: `item ${n} needs a label` };
    for (const key of Object.keys(item)) {
      if (key !== 'label' && key !== 'url') return { error: `item ${n} has unknown field ${key}` };
    }
    const label = item['label'];
    if (typeof label !== 'string' || label === '') return { error: `item ${n} needs a label` };
    if (label.length > 80) return { error: `item ${n} label is over 80 characters` };
    const url = item['url'];
    if (url !== undefined) {
      if (typeof url !== 'string' || url.length > 2048 || !HTTP_URL.test(url)) {
        return { error: `item ${n} url is not an http(s) URL` };
      }
      out.push({ url, label });
    } else {
      out.push({ label });
    }
  }
  return { part: { type: 'buttons', items: out } };
}

export function validateSelection(body: string): { part: SelectionPart } | { error: string } {
  const parsed = parseJson(body);
  if (!parsed.ok) return { error: 'the selection block is not valid JSON' };
  const v = parsed.value;
  if (!isRecord(v)) return { error: 'the selection block must be a JSON object' };
  for (const key of Object.keys(v)) {
    if (key !== 'type' && key !== 'title' && key !== 'options')
      return { error: `the selection block has unknown field ${key}` };
  }
  if (v['type'] !== undefined && v['type'] !== 'selection')
    return { error: 'the selection block type must be "selection"' };
  const title = typeof v['title'] === 'string' ? v['title'].trim() : '';
  if (title === '') return { error: 'the selection block needs a nonblank title (the question)' };
  if (title.length > 60) return { error: 'the selection title is over 60 characters' };
  const options = v['options'];
  if (!Array.isArray(options) || options.length === 0) return { error: 'the selection block has no options' };
  if (options.length > 25) return { error: `the selection block has ${options.length} options; the most is 25` };
  const seen = new Set<string>();
  const out: SelectionPart['options'] = [];
  for (const [i, option] of options.entries()) {
    const n = i + 1;
    if (!isRecord(option)) return { error: `option ${n} must be an object with value and label` };
    for (const key of Object.keys(option)) {
      if (key !== 'value' && key !== 'label') return { error: `option ${n} has unknown field ${key}` };
    }
    const value = option['value'];
    // Values are tokens, case-sensitive and not trimmed; the regex is ASCII-only by construction.
    if (typeof value !== 'string' || value.length > 100 || !SELECTION_VALUE.test(value)) {
      return {
        error: `option ${n} value is not a token matching ^[A-Za-z0-9][A-Za-z0-9._:-]*$ of at most 100 characters`,
      };
    }
    if (seen.has(value)) return { error: `option ${n} value ${value} is not unique` };
    seen.add(value);
    const label = typeof option['label'] === 'string' ? option['label'].trim() : '';
    if (label === '') return { error: `option ${n} needs a label` };
    if (label.length > 80) return { error: `option ${n} label is over 80 characters` };
    out.push({ value, label });
  }
  return { part: { type: 'selection', title, options: out } };
}

const PAYMENT_KEYS = new Set([
  'description',
  'category',
  'mode',
  'amount',
  'currency',
  'price_id',
  'quantity',
  'image_url',
]);

export function validatePayment(body: string): { request: CreatePaymentRequest } | { error: string } {
  const parsed = parseJson(body);
  if (!parsed.ok) return { error: 'the payment block is not valid JSON' };
  const v = parsed.value;
  if (!isRecord(v)) return { error: 'the payment block must be a JSON object' };
  for (const key of Object.keys(v))
    if (!PAYMENT_KEYS.has(key)) return { error: `the payment block has unknown field ${key}` };
  const description = v['description'];
  if (typeof description !== 'string') return { error: 'the payment block needs a description' };
  const codePoints = [...description.trim()].length;
  if (codePoints < 1 || codePoints > 32) return { error: 'the payment description must be 1 to 32 characters' };
  const category = v['category'];
  if (category !== 'physical_goods' && category !== 'digital_goods' && category !== 'donation') {
    return { error: 'the payment category must be physical_goods, digital_goods or donation' };
  }
  const mode = v['mode'] ?? 'payment';
  if (mode !== 'payment' && mode !== 'subscription')
    return { error: 'the payment mode must be payment or subscription' };
  const request: CreatePaymentRequest = { description, category, mode };
  if (v['image_url'] !== undefined) {
    const u = v['image_url'];
    if (typeof u !== 'string' || u.length < 1 || u.length > 2048)
      return { error: 'the payment image_url must be 1 to 2048 characters' };
    request.image_url = u;
  }
  if (mode === 'payment') {
    if (v['price_id'] !== undefined || v['quantity'] !== undefined)
      return { error: 'payment mode takes no price_id or quantity' };
    const amount = v['amount'];
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount))
      return { error: 'payment mode needs an integer amount' };
    const currency = v['currency'];
    if (typeof currency !== 'string' || !/^[A-Za-z]{3}$/.test(currency))
      return { error: 'payment mode needs a 3-letter currency' };
    request.amount = amount;
    request.currency = currency;
  } else {
    if (v['amount'] !== undefined || v['currency'] !== undefined)
      return { error: 'subscription mode takes no amount or currency' };
    const priceId = v['price_id'];
    if (typeof priceId !== 'string' || priceId === '') return { error: 'subscription mode needs a price_id' };
    request.price_id = priceId;
    if (v['quantity'] !== undefined) {
      const q = v['quantity'];
      if (typeof q !== 'number' || !Number.isSafeInteger(q) || q < 1)
        return { error: 'the payment quantity must be an integer of at least 1' };
      request.quantity = q;
    }
  }
  return { request };
}

const RECURRING_MAX: Record<string, number> = { day: 1095, week: 156, month: 36, year: 3 };

export function validateInvoice(body: string): { invoice: InvoiceSpec } | { error: string } {
  const parsed = parseJson(body);
  if (!parsed.ok) return { error: 'the invoice block is not valid JSON' };
  const v = parsed.value;
  if (!isRecord(v)) return { error: 'the invoice block must be a JSON object' };
  const allowed = new Set(['type', 'title', 'amount', 'currency', 'goods', 'url', 'recurring']);
  for (const key of Object.keys(v))
    if (!allowed.has(key)) return { error: `the invoice block has unknown field ${key}` };
  if (v['type'] !== undefined && v['type'] !== 'invoice') return { error: 'the invoice block type must be "invoice"' };
  const title = typeof v['title'] === 'string' ? v['title'].trim() : '';
  if (title.length < 1 || title.length > 32) return { error: 'the invoice title must be 1 to 32 characters' };
  const amount = v['amount'];
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1 || amount > 99_999_999) {
    return { error: 'the invoice amount must be an integer from 1 to 99,999,999' };
  }
  const currency = v['currency'];
  if (typeof currency !== 'string' || !/^[A-Za-z]{3}$/.test(currency))
    return { error: 'the invoice currency must be 3 letters' };
  const goods = v['goods'];
  if (goods !== 'physical' && goods !== 'digital') return { error: 'the invoice goods must be physical or digital' };
  const url = v['url'];
  let host = '';
  try {
    if (typeof url === 'string' && url.length <= 2048 && url.startsWith('https://'))
      host = new URL(url).hostname.toLowerCase();
  } catch {
    host = '';
  }
  if (typeof url !== 'string' || !STRIPE_HOSTS.has(host)) {
    return {
      error:
        'the invoice url must be an https Stripe checkout link (checkout, buy, book, donate or invoice.stripe.com)',
    };
  }
  const invoice: InvoiceSpec = { title, amount, currency: currency.toLowerCase(), goods, url };
  const recurring = v['recurring'];
  if (recurring !== undefined) {
    if (!isRecord(recurring)) return { error: 'the invoice recurring must be an object' };
    const interval = recurring['interval'];
    const count = recurring['interval_count'];
    if (typeof interval !== 'string' || !(interval in RECURRING_MAX))
      return { error: 'the invoice interval must be day, week, month or year' };
    const max = RECURRING_MAX[interval] ?? 0;
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > max) {
      return { error: `the invoice interval_count must be 1 to ${max} for ${interval} (at most 3 years)` };
    }
    invoice.recurring = { interval: interval as 'day' | 'week' | 'month' | 'year', interval_count: count };
  }
  return { invoice };
}

/** The custom_emoji limit of SendReactionRequest, in UTF-16 units. */
const MAX_CUSTOM_EMOJI_UNITS = 32;
const PICTOGRAPH = /\p{Extended_Pictographic}|\p{Regional_Indicator}/u;

/** A reaction block's body is one tapback name (`like`, `love`, …) or one emoji. */
export function validateReaction(body: string): { reaction: ReactionSpec } | { error: string } {
  const v = body.trim();
  if ((TAPBACKS as readonly string[]).includes(v)) return { reaction: { type: v as Tapback } };
  if (v === '' || /\s/.test(v) || /[A-Za-z0-9]/.test(v) || !PICTOGRAPH.test(v)) {
    return {
      error: 'the reaction block must be one emoji or a tapback name (love, like, dislike, laugh, emphasize, question)',
    };
  }
  if (v.length > MAX_CUSTOM_EMOJI_UNITS) return { error: 'the reaction emoji is over 32 characters' };
  return { reaction: { type: 'custom', custom_emoji: v } };
}

function fenceOf(kind: string): RegExp {
  return new RegExp(
    `(^|\\n)[ \\t]*\`\`\`[ \\t]*${kind}(?:[ \\t][^\\r\\n]*)?\\r?\\n([\\s\\S]*?)\\r?\\n[ \\t]*\`\`\`[ \\t]*(?=\\r?\\n|$)`,
    'g',
  );
}

const PAYMENT_BLOCK = fenceOf('payment');
const INVOICE_BLOCK = fenceOf('invoice');
const UNSENDABLE_FENCES = UNSENDABLE_BLOCKS.map((kind) => ({ kind, re: fenceOf(kind) }));

function allMatches(re: RegExp, text: string): RegExpExecArray[] {
  return [...text.matchAll(new RegExp(re.source, 'g'))];
}

/** Lifts the component blocks of an answer. */
export function liftComponents(answer: string): LiftedComponents {
  const result: LiftedComponents = {
    text: answer,
    buttons: null,
    selection: null,
    payment: null,
    invoice: null,
    reaction: null,
    refusals: [],
  };
  let text = answer;

  // Kept in the words whatever their body: the locked contract has no part to carry them.
  for (const { kind, re } of UNSENDABLE_FENCES) {
    for (const m of allMatches(re, text)) {
      const why = parseJson(m[2] ?? '').ok ? '' : ' (and its body is not valid JSON)';
      result.refusals.push(`the locked Relay contract has no ${kind} part, so Relay would refuse it${why}`);
    }
  }

  const reactions = allMatches(REACTION_BLOCK, text);
  if (reactions.length > 1) result.refusals.push('send at most one reaction per answer');
  else if (reactions[0] !== undefined) {
    const m = reactions[0];
    const v = validateReaction(m[2] ?? '');
    if ('error' in v) result.refusals.push(v.error);
    else {
      result.reaction = v.reaction;
      text = cut(text, m.index + (m[1] ?? '').length, m[0].length - (m[1] ?? '').length);
    }
  }

  const invoices = allMatches(INVOICE_BLOCK, text);
  if (invoices.length > 0) {
    const others =
      invoices.length > 1 ||
      ANY_BUTTONS_FENCE.test(text) ||
      ANY_SELECTION_FENCE.test(text) ||
      allMatches(PAYMENT_BLOCK, text).length > 0;
    const m = invoices[0];
    if (others) result.refusals.push('send one invoice and nothing else in the same message');
    else if (m !== undefined) {
      const v = validateInvoice(m[2] ?? '');
      if ('error' in v) result.refusals.push(v.error);
      else {
        result.invoice = v.invoice;
        text = cut(text, m.index + (m[1] ?? '').length, m[0].length - (m[1] ?? '').length);
      }
    }
  }

  const payments = allMatches(PAYMENT_BLOCK, text);
  if (payments.length > 0 && result.invoice === null) {
    const m = payments[0];
    if (payments.length > 1 || ANY_BUTTONS_FENCE.test(text) || ANY_SELECTION_FENCE.test(text)) {
      result.refusals.push('send one payment and no buttons or selection in the same message');
    } else if (m !== undefined) {
      const v = validatePayment(m[2] ?? '');
      if ('error' in v) result.refusals.push(v.error);
      else {
        result.payment = v.request;
        text = cut(text, m.index + (m[1] ?? '').length, m[0].length - (m[1] ?? '').length);
      }
    }
  }

  const selections = allMatches(SELECTION_BLOCK, text);
  if (selections.length > 0) {
    const m = selections[0];
    if (selections.length > 1 || ANY_BUTTONS_FENCE.test(text)) {
      result.refusals.push('send one selection and no buttons in the same message');
    } else if (m !== undefined) {
      const v = validateSelection(m[2] ?? '');
      if ('error' in v) result.refusals.push(v.error);
      else {
        const rest = cut(text, m.index + (m[1] ?? '').length, m[0].length - (m[1] ?? '').length);
        if (rest !== '' && /^https?:\/\/\S+$/.test(rest.trim())) {
          result.refusals.push('a selection cannot be sent beside only a link');
        } else {
          result.selection = v.part;
          text = rest;
        }
      }
    }
  } else {
    const buttons = allMatches(BUTTONS_BLOCK, text);
    const m = buttons[0];
    // Relay carries one buttons part per Message; lifting the first and leaving the second in the
    // words would show half of what Hermes offered, so both stay.
    if (buttons.length > 1) result.refusals.push('send one buttons block per answer');
    else if (m !== undefined) {
      const v = validateButtons(m[2] ?? '');
      if ('error' in v) result.refusals.push(v.error);
      else {
        const rest = cut(text, m.index + (m[1] ?? '').length, m[0].length - (m[1] ?? '').length);
        if (rest.trim() === '') result.refusals.push('buttons need a text part beside them that asks the question');
        // A lone URL becomes its own link Message, so the buttons would go out with no question.
        else if (/^https?:\/\/\S+$/.test(rest.trim()))
          result.refusals.push('buttons cannot be sent beside only a link');
        else {
          result.buttons = v.part;
          text = rest;
        }
      }
    }
  }
  result.text = text;
  return result;
}
