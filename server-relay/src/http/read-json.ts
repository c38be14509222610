import type { FastifyInstance, FastifyRequest } from 'fastify';
import { WireError } from '@conduit/contracts/server';
import { FIXED_LIMITS } from '../limits.js';
import { isPlainObject } from '../domain/text.js';

/**
 * Bodies are read as text whatever the content type (the reference reads every body as JSON), and
 * parsed only when a handler asks, so checks that come first in the reference (rate limits,
 * authentication) still answer first.
 */
export function acceptAnyBodyAsText(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  // Bytes bound generous enough for 32,768 characters of any script; the character bound is checked in readJson.
  app.addContentTypeParser(
    '*',
    { parseAs: 'string', bodyLimit: FIXED_LIMITS.maxBodyChars * 4 },
    (_request, body, done) => done(null, body),
  );
}

/** The reference's readJson: ≤32,768 characters (413), empty = {}, anything but a JSON object = 400 invalid_json. */
export function readJson(
  request: FastifyRequest,
  maxChars: number = FIXED_LIMITS.maxBodyChars,
): Record<string, unknown> {
  const raw = request.body;
  if (raw === undefined || raw === null || raw === '') return {};
  if (typeof raw !== 'string') throw new WireError(400, 'invalid_json');
  if (raw.length > maxChars) throw new WireError(413, 'payload_too_large');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new WireError(400, 'invalid_json');
  }
  if (!isPlainObject(parsed)) throw new WireError(400, 'invalid_json');
  return parsed;
}
