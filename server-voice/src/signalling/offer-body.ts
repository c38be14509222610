import type { Readable } from 'node:stream';
import { CALL_SETUP_ERRORS, CALL_SETUP_LIMITS } from '@conduit/contracts/voice/calls';
import { SetupError } from './setup-error.js';

/** The call-setup body once read: the offer, the raw session JSON text ('' when absent) and the session object. */
export interface OfferBody {
  sdp: string;
  /** Exactly the bytes the client sent as `session` (the proxy signature covers them), '' when absent. */
  sessionJson: string;
  session: Record<string, unknown>;
}

/**
 * Reads the body with a hard byte cap: the upload stops at the first byte past the limit, so an oversize
 * body costs at most the limit in memory. The caller's signal (the setup deadline) aborts a slow upload.
 */
export function readBoundedBody(stream: Readable, limit: number, signal: AbortSignal): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const finish = (error: SetupError | null) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      signal.removeEventListener('abort', onAbort);
      if (error) {
        // Stop reading but leave the socket open, so the client still receives its answer.
        stream.pause();
        reject(error);
      } else resolve(Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer | string) => {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      total += buffer.length;
      if (total > limit) finish(new SetupError(413, CALL_SETUP_ERRORS.bodyTooLarge));
      else chunks.push(buffer);
    };
    const onEnd = () => finish(null);
    const onError = () => finish(new SetupError(400, CALL_SETUP_ERRORS.invalidOffer));
    const onAbort = () => finish(new SetupError(400, CALL_SETUP_ERRORS.invalidOffer));
    if (signal.aborted) return onAbort();
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The media type without parameters, lowercased. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

interface Part {
  name: string | undefined;
  data: Buffer;
}

/** Splits a multipart body into parts (RFC 2046); anything malformed yields no parts at all. */
export function parseMultipart(body: Buffer, boundary: string): Part[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Part[] = [];
  let position = body.indexOf(delimiter);
  if (position < 0) return [];
  for (;;) {
    position += delimiter.length;
    if (body.subarray(position, position + 2).toString() === '--') break; // close delimiter
    // Skip transport padding up to the CRLF that ends the delimiter line.
    const lineEnd = body.indexOf('\r\n', position);
    if (lineEnd < 0) return [];
    const headerEnd = body.indexOf('\r\n\r\n', lineEnd);
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), lineEnd);
    if (next < 0) return [];
    let name: string | undefined;
    let dataStart: number;
    if (lineEnd === next) {
      dataStart = next; // a part with neither headers nor data
    } else if (headerEnd < 0 || headerEnd > next) {
      return [];
    } else {
      const headers = body.subarray(lineEnd + 2, headerEnd).toString('latin1');
      const disposition = /^content-disposition:(.*)$/im.exec(headers)?.[1] ?? '';
      name = /;\s*name=(?:"([^"]*)"|([^;\s]+))/i
        .exec(disposition)
        ?.slice(1)
        .find((v) => v !== undefined);
      dataStart = headerEnd + 4;
    }
    parts.push({ name, data: body.subarray(dataStart, next) });
    position = next + 2;
  }
  return parts;
}

function decodeSession(json: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new SetupError(400, CALL_SETUP_ERRORS.sessionNotObject);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new SetupError(400, CALL_SETUP_ERRORS.sessionNotObject);
  return value as Record<string, unknown>;
}

/** Decodes a read body by its content type: raw `application/sdp`, or `multipart/*` with `sdp` and `session`. */
export function decodeOfferBody(contentType: string | undefined, body: Buffer): OfferBody {
  const type = mediaType(contentType);
  if (type === 'application/sdp') {
    if (body.length > CALL_SETUP_LIMITS.sdpBytes) throw new SetupError(413, CALL_SETUP_ERRORS.sdpTooLarge);
    const sdp = body.toString('utf8');
    if (!sdp.trim()) throw new SetupError(400, CALL_SETUP_ERRORS.missingSdp);
    return { sdp, sessionJson: '', session: {} };
  }
  if (!type.startsWith('multipart/')) throw new SetupError(415, CALL_SETUP_ERRORS.unsupportedMediaType);
  const boundary = boundaryOf(contentType ?? '');
  const parts = boundary ? parseMultipart(body, boundary) : [];
  // Only the first `sdp` and `session` parts count; other parts are ignored as the reference does.
  const sdpPart = parts.find((part) => part.name === 'sdp');
  const sessionPart = parts.find((part) => part.name === 'session');
  if (sdpPart && sdpPart.data.length > CALL_SETUP_LIMITS.sdpBytes)
    throw new SetupError(413, CALL_SETUP_ERRORS.sdpTooLarge);
  if (sessionPart && sessionPart.data.length > CALL_SETUP_LIMITS.sessionBytes)
    throw new SetupError(413, CALL_SETUP_ERRORS.sessionTooLarge);
  const sdp = sdpPart?.data.toString('utf8') ?? '';
  if (!sdp.trim()) throw new SetupError(400, CALL_SETUP_ERRORS.missingSdp);
  const sessionJson = sessionPart?.data.toString('utf8') ?? '';
  return { sdp, sessionJson, session: sessionPart ? decodeSession(sessionJson) : {} };
}
