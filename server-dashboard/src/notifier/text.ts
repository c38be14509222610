/**
 * Text shaping for notification copy. The relay cuts again, but cutting here keeps the host's
 * events within the relay's limits, so nothing is rejected or silently shortened elsewhere.
 */

/** Whitespace collapsed to single spaces, then a hard cut at `max` characters (no ellipsis, as the reference does). */
export function clean(value: unknown, max: number): string {
  if (typeof value !== 'string') return '';
  return Array.from(value.split(/\s+/).filter(Boolean).join(' ')).slice(0, max).join('');
}

const FENCE_LINE = /^\s*(```|~~~)[^\n]*$/;
const TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;
const HEADING = /^\s{0,3}#{1,6}\s+/;
const BLOCKQUOTE = /^\s{0,3}>\s?/;
const HORIZONTAL_RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;

/**
 * Markdown reduced to plain text for a lock-screen banner: fence lines, table rules and horizontal
 * rules disappear, heading and quote markers go, links keep their text and lose their target,
 * emphasis markers are dropped. The code inside a fence stays, since it is often the answer.
 */
export function plainText(markdown: string): string {
  const lines: string[] = [];
  for (const line of markdown.split(/\r?\n/)) {
    if (FENCE_LINE.test(line) || TABLE_RULE.test(line) || HORIZONTAL_RULE.test(line)) continue;
    let text = line.replace(HEADING, '').replace(BLOCKQUOTE, '');
    // Table rows: the pipes between cells become spaced separators.
    if (/^\s*\|.*\|\s*$/.test(text)) {
      text = text
        .trim()
        .replace(/^\|/, '')
        .replace(/\|$/, '')
        .split('|')
        .map((cell) => cell.trim())
        .join(' · ');
    }
    text = text
      .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]+)\]\[[^\]]*\]/g, '$1')
      .replace(/<(https?:\/\/[^>]+)>/g, '$1')
      .replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, '$2')
      .replace(/(^|[^*\w])\*(?=\S)([^*\n]*?\S)\*(?!\*)/g, '$1$2')
      .replace(/(^|[^_\w])_(?=\S)([^_\n]*?\S)_(?![_\w])/g, '$1$2')
      .replace(/~~(?=\S)([\s\S]*?\S)~~/g, '$1')
      .replace(/`([^`\n]+)`/g, '$1');
    lines.push(text);
  }
  return lines.join('\n');
}

/** Limits before delivery, matching the relay's own cuts. */
export const TITLE_MAX = 120;
export const BODY_MAX = 500;
