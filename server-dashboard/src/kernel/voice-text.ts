import { DetailError } from './detail-errors.js';

/**
 * The text rules the reference applies to what a voice model asks and is answered with (ROUTES.md,
 * Web search and Memory): one home, because web search and memory recall must refuse alike.
 */
const QUERY_MAX_CHARS = 500;
/** A raw query is refused before it is collapsed past this, so a huge body is never normalised. */
const RAW_QUERY_MAX_CHARS = 2000;

/** Whitespace collapsed, then cut to `max` characters with an ellipsis (`text[:n-1].rstrip() + "…"`). */
export function clipLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  return flat.slice(0, max - 1).trimEnd() + '…';
}

/** Cut to `max` characters keeping line breaks (memory and personality text), with an ellipsis when cut. */
export function clipBlock(text: string, max: number): string {
  if (text.length <= max) return text;
  return text.slice(0, max - 1).trimEnd() + '…';
}

/** A voice lookup's query: a string, at most 2,000 characters as sent and 500 once collapsed, not empty. */
export function voiceQuery(raw: unknown): string {
  const text = typeof raw === 'string' ? raw : '';
  if (text.length > RAW_QUERY_MAX_CHARS) throw new DetailError(400, 'query is longer than 500 characters');
  const query = text.replace(/\s+/g, ' ').trim();
  if (!query) throw new DetailError(400, 'query is required');
  if (query.length > QUERY_MAX_CHARS) throw new DetailError(400, 'query is longer than 500 characters');
  return query;
}
