import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';

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
