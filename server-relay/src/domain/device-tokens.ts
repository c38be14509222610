/** APNs device tokens as the app sends them: `<`, `>` and whitespace removed, lowercased, 64–200 hex. */
const TOKEN = /^[0-9a-f]{64,200}$/;

export function normalizeDeviceToken(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const token = String(value as string)
    .replace(/[<>\s]/g, '')
    .toLowerCase();
  return TOKEN.test(token) ? token : undefined;
}
