import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { WireError } from '@conduit/contracts/server';
import type { z } from 'zod';

/** The reference's body bound, in characters. */
export const MAX_BODY_CHARS = 32_768;

/**
 * The request's JSON object, by the reference's readJson rules: at most 32,768 characters (413),
 * empty means `{}`, anything but a JSON object is 400 invalid_json. The relay core reads bodies as
 * text so that rate limits and authentication answer before a body is looked at; an app with
 * Fastify's own JSON parser hands us an object, which passes through the same checks.
 */
export function readJsonObject(request: FastifyRequest): Record<string, unknown> {
  const raw: unknown = request.body;
  if (raw === undefined || raw === null || raw === '') return {};
  let parsed: unknown = raw;
  if (typeof raw === 'string') {
    if (raw.length > MAX_BODY_CHARS) throw new WireError(413, 'payload_too_large');
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new WireError(400, 'invalid_json');
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new WireError(400, 'invalid_json');
  return parsed as Record<string, unknown>;
}

/** Validates the body against its contract schema; any failure is `400 {error: code}`. */
export function parseBody<S extends z.ZodType>(request: FastifyRequest, schema: S, code: string): z.output<S> {
  const parsed = schema.safeParse(readJsonObject(request));
  if (!parsed.success) throw new WireError(400, code);
  return parsed.data;
}

export function authorizationOf(headers: { authorization?: string | string[] | undefined }): string | undefined {
  const value = headers.authorization;
  return typeof value === 'string' ? value : undefined;
}

const WATCH_KEY = /^Bearer\s+([A-Za-z0-9_-]{43})$/i;

/** SHA-256 of the Watch key in `Authorization: Bearer <43-char base64url>`, or undefined. */
export function watchKeyHash(authorization: string | undefined): Buffer | undefined {
  const key = WATCH_KEY.exec(authorization ?? '')?.[1];
  // The host registered sha256 of the key's ASCII text.
  return key === undefined ? undefined : createHash('sha256').update(key, 'ascii').digest();
}

/** Runs `onGone` if the client disconnects before the reply is sent (held requests drop their work). */
export function onClientGone(reply: FastifyReply, onGone: () => void): void {
  // The client may already have gone while the request was being checked.
  if (reply.raw.destroyed || reply.raw.socket?.destroyed === true) {
    onGone();
    return;
  }
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) onGone();
  });
}
