import http2, { type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { ProviderToken } from './provider-token.js';
import type { ApnsNotification, ApnsProviderOptions, ApnsResult, ApnsSender } from './types.js';

/** APNs refuses a longer `apns-collapse-id` with 400 BadCollapseId; we answer the same without a round trip. */
export const MAX_COLLAPSE_ID_BYTES = 64;
export const DEFAULT_APNS_TIMEOUT_MS = 10_000;

/**
 * The APNs provider API client on node:http2: `POST /3/device/<token>` with a JWT provider token.
 *
 * The reference opened one session per send; APNs asks providers to keep connections open, and a
 * pooled session multiplexes hundreds of pushes. The session is replaced when the server sends
 * GOAWAY (streams already sent finish on the old one), closes, or errors; a stream the server
 * refused before processing it (REFUSED_STREAM, or beyond a GOAWAY's last stream id) is retried
 * once on a fresh session, since APNs never saw it. Every other failure rejects: the caller cannot
 * know whether Apple delivered, and the relay treats it as unreachable.
 */
export class Http2ApnsSender implements ApnsSender {
  private readonly token: ProviderToken;
  private readonly timeoutMs: number;
  private session: ClientHttp2Session | undefined;
  private closed = false;

  constructor(
    private readonly options: ApnsProviderOptions,
    private readonly defaultTopic: string,
  ) {
    if (!/^https:\/\//i.test(options.origin)) throw new Error('APNS_ORIGIN must be an https:// URL.');
    this.token = new ProviderToken(options.keyPem, options.keyId, options.teamId, options.now);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_APNS_TIMEOUT_MS;
  }

  async send(deviceToken: string, notification: ApnsNotification): Promise<ApnsResult> {
    if (this.closed) throw new Error('APNs sender is closed');
    if (notification.collapseId !== undefined && Buffer.byteLength(notification.collapseId) > MAX_COLLAPSE_ID_BYTES) {
      return { ok: false, status: 400, reason: 'BadCollapseId' };
    }
    const body = JSON.stringify(notification.payload);
    const headers = this.headersFor(deviceToken, notification, body);
    try {
      return await this.request(headers, body);
    } catch (error) {
      if (!isUnprocessed(error)) throw error;
      return this.request(headers, body);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const session = this.session;
    this.session = undefined;
    if (!session || session.destroyed) return;
    await new Promise<void>((resolve) => {
      session.close(() => resolve());
      // A peer that never answers our GOAWAY must not hold shutdown.
      setTimeout(() => {
        session.destroy();
        resolve();
      }, 1_000).unref();
    });
  }

  private headersFor(deviceToken: string, notification: ApnsNotification, body: string): http2.OutgoingHttpHeaders {
    const pushType = notification.pushType ?? 'alert';
    // APNs refuses background pushes at priority 10.
    const priority = notification.priority ?? (pushType === 'background' ? 5 : 10);
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': `/3/device/${encodeURIComponent(deviceToken)}`,
      authorization: `bearer ${this.token.current()}`,
      'apns-topic': notification.topic ?? this.defaultTopic,
      'apns-push-type': pushType,
      'apns-priority': String(priority),
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    };
    if (notification.expiration !== undefined) headers['apns-expiration'] = String(notification.expiration);
    if (notification.collapseId !== undefined) headers['apns-collapse-id'] = notification.collapseId;
    return headers;
  }

  private connect(): ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = http2.connect(this.options.origin, this.options.ca ? { ca: this.options.ca } : {});
    const forget = (): void => {
      if (this.session === session) this.session = undefined;
    };
    // After GOAWAY no new stream may start on this session; in-flight ones still complete.
    session.on('goaway', forget);
    session.on('close', forget);
    // Errors reach the pending streams; without a listener they would crash the process.
    session.on('error', forget);
    // An idle pooled connection must not keep the process alive (a pending request's timer does).
    session.unref();
    this.session = session;
    return session;
  }

  private request(headers: http2.OutgoingHttpHeaders, body: string): Promise<ApnsResult> {
    return new Promise<ApnsResult>((resolve, reject) => {
      let stream: ClientHttp2Stream;
      try {
        stream = this.connect().request(headers);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      let status: number | undefined;
      const chunks: Buffer[] = [];
      let settled = false;
      const finish = (outcome: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        outcome();
      };
      const timer = setTimeout(() => {
        finish(() => reject(new Error(`APNs request timed out after ${this.timeoutMs} ms`)));
        stream.close(http2.constants.NGHTTP2_CANCEL);
      }, this.timeoutMs);
      stream.on('response', (responseHeaders) => {
        const value = responseHeaders[':status'];
        status = typeof value === 'number' ? value : Number(value);
      });
      stream.on('data', (chunk: Buffer) => {
        // APNs error bodies are tiny; cap what we keep from a misbehaving peer.
        if (chunks.reduce((n, c) => n + c.length, 0) < 8_192) chunks.push(chunk);
      });
      stream.on('error', (error) => finish(() => reject(error)));
      stream.on('close', () => {
        if (status === undefined || !Number.isInteger(status)) {
          const code = stream.rstCode;
          finish(() => reject(new StreamClosedError(code)));
          return;
        }
        const answered = status;
        finish(() => resolve(resultOf(answered, Buffer.concat(chunks).toString('utf8'))));
      });
      stream.end(body);
    });
  }
}

/** A stream that closed before APNs sent a `:status`. */
export class StreamClosedError extends Error {
  constructor(readonly rstCode: number | undefined) {
    super(`APNs stream closed without a response (rst code ${rstCode ?? 'none'})`);
  }
}

function resultOf(status: number, body: string): ApnsResult {
  if (status === 200) return { ok: true, status };
  let reason: string | undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed && typeof parsed === 'object' && 'reason' in parsed && typeof parsed.reason === 'string') {
      reason = parsed.reason;
    }
  } catch {
    // Not JSON (a proxy's error page): the status alone says what happened.
  }
  return reason === undefined ? { ok: false, status } : { ok: false, status, reason };
}

/** True when the server provably did not process the stream, so resending cannot duplicate a push. */
function isUnprocessed(error: unknown): boolean {
  if (error instanceof StreamClosedError) return error.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM;
  if (!(error instanceof Error)) return false;
  const code = (error as Error & { code?: unknown }).code;
  return (
    code === 'ERR_HTTP2_GOAWAY_SESSION' || (code === 'ERR_HTTP2_STREAM_ERROR' && /REFUSED_STREAM/.test(error.message))
  );
}
