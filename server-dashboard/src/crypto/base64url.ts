/**
 * Unpadded base64url, as every Conduit sealed format uses it. Decoding is strict on purpose: the
 * reference rejects anything outside the alphabet and lengths that cannot come from whole bytes
 * (`len % 4 == 1`), and Node's own decoder would silently skip such characters.
 */
const ALPHABET = /^[A-Za-z0-9_-]*$/;

export function encodeBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

/** The bytes of an unpadded base64url string, or null when it is not one. */
export function decodeBase64Url(text: string): Uint8Array | null {
  if (!ALPHABET.test(text) || text.length % 4 === 1) return null;
  return new Uint8Array(Buffer.from(text, 'base64url'));
}
