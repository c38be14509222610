import { createHash, randomUUID } from 'node:crypto';

/**
 * JSON exactly as Python's `json.dumps(values, separators=(",", ":"))` writes a list of strings:
 * non-ASCII escaped as \uXXXX (ensure_ascii), so ids match the reference plugin's for the same parts.
 */
function pythonJsonStrings(values: string[]): string {
  const escaped = values.map(
    (value) =>
      '"' +
      // eslint-disable-next-line no-control-regex -- control characters are exactly what must be escaped
      value.replace(/[\\"\u0000-\u001f\u007f-\uffff]/g, (ch) => {
        switch (ch) {
          case '"':
            return '\\"';
          case '\\':
            return '\\\\';
          case '\n':
            return '\\n';
          case '\r':
            return '\\r';
          case '\t':
            return '\\t';
          case '\b':
            return '\\b';
          case '\f':
            return '\\f';
          default:
            return '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0');
        }
      }) +
      '"',
  );
  return '[' + escaped.join(',') + ']';
}

/**
 * A stable event id from its parts, so a replayed hook produces the same id and the relay's ledger
 * drops the duplicate. With no usable part the id is random (nothing to be stable about).
 */
export function eventId(prefix: string, ...parts: unknown[]): string {
  const values = parts
    .map((part) => (part === null || part === undefined ? '' : String(part)).trim())
    .filter((value) => value !== '');
  if (values.length === 0) return `${prefix}:${randomUUID()}`;
  const digest = createHash('sha256').update(pythonJsonStrings(values), 'utf8').digest('hex');
  return `${prefix}:${digest.slice(0, 32)}`;
}
