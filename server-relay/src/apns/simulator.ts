import { execFileSync } from 'node:child_process';
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2, { type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A local APNs provider API (HTTP/2 over TLS) for tests and e2e runs: it checks what Apple checks —
 * the ES256 provider token's signature, key id, team and age, the path, the device token, every
 * apns-* header, the payload size — records each request, and answers 200 or Apple's error
 * `{reason}` bodies. Tests can script answers (410 Unregistered, TopicDisallowed, …) or connection
 * failures (reset stream, dropped connection, GOAWAY) per device token or for the next request.
 */

export interface SimulatedRequest {
  deviceToken: string;
  /** Lower-case header names; pseudo headers left out. */
  headers: Record<string, string>;
  /** The parsed JSON body (undefined when it was not JSON). */
  payload: unknown;
  jwtHeader: Record<string, unknown> | undefined;
  jwtClaims: Record<string, unknown> | undefined;
  /** What the simulator answered (a status, or the failure it simulated). */
  answer: number | SimulatedFailure;
}

/** Connection-level failures: reset the stream (REFUSED_STREAM or INTERNAL_ERROR), destroy the socket, send GOAWAY, or never answer. */
export type SimulatedFailure = 'refuse-stream' | 'reset-stream' | 'drop-connection' | 'goaway' | 'hang';

export type ScriptedAnswer = { status: number; reason?: string; timestamp?: number } | SimulatedFailure;

export interface ApnsSimulatorOptions {
  /** Public half of the provider key (PEM or KeyObject) the simulator verifies signatures with. */
  publicKey: string | KeyObject;
  keyId: string;
  teamId: string;
  /** Topics the key may push to; others get 400 TopicDisallowed. Unset: any topic. */
  allowedTopics?: string[];
  /** Clock for the provider token's age check (ms). */
  now?: () => number;
}

const PUSH_TYPES = new Set([
  'alert',
  'background',
  'location',
  'voip',
  'complication',
  'fileprovider',
  'mdm',
  'liveactivity',
  'pushtotalk',
  'widgets',
]);
const MAX_PAYLOAD_BYTES = 4_096;
const MAX_VOIP_PAYLOAD_BYTES = 5_120;
/** Apple refuses provider tokens older than one hour. */
const MAX_TOKEN_AGE_S = 3_600;

export class ApnsSimulator {
  readonly requests: SimulatedRequest[] = [];
  /** Sessions (connections) the simulator has accepted, to check pooling. */
  connections = 0;
  private readonly next: ScriptedAnswer[] = [];
  private readonly perToken = new Map<string, ScriptedAnswer>();
  private readonly publicKey: KeyObject;
  private readonly sessions = new Set<ServerHttp2Session>();
  private readonly hanging = new Set<Http2ServerResponse>();

  private constructor(
    private readonly server: http2.Http2SecureServer,
    private readonly options: ApnsSimulatorOptions,
    /** The self-signed certificate (PEM) a client must trust. */
    readonly ca: string,
  ) {
    this.publicKey = typeof options.publicKey === 'string' ? createPublicKey(options.publicKey) : options.publicKey;
  }

  /** Starts on 127.0.0.1 with a fresh self-signed certificate for `localhost` and 127.0.0.1. */
  static async start(options: ApnsSimulatorOptions): Promise<ApnsSimulator> {
    const { key, cert } = selfSignedCertificate();
    const server = http2.createSecureServer({ key, cert, allowHTTP1: false });
    const simulator = new ApnsSimulator(server, options, cert);
    server.on('session', (session) => {
      simulator.connections += 1;
      simulator.sessions.add(session);
      session.on('close', () => simulator.sessions.delete(session));
      session.on('error', () => undefined);
    });
    server.on('request', (req, res) => simulator.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return simulator;
  }

  /** `https://localhost:<port>` — the APNS_ORIGIN a client uses. */
  get origin(): string {
    return `https://localhost:${(this.server.address() as AddressInfo).port}`;
  }

  /** Answers the next request (after the checks pass) with `answer`; queued in order. */
  answerNext(...answers: ScriptedAnswer[]): void {
    this.next.push(...answers);
  }

  /** Answers every request for this device token with `answer` (after the checks pass). */
  answerFor(deviceToken: string, answer: ScriptedAnswer): void {
    this.perToken.set(deviceToken, answer);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.stream.close(http2.constants.NGHTTP2_CANCEL);
    for (const session of this.sessions) session.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: Http2ServerRequest, res: Http2ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => this.answer(req, res, Buffer.concat(chunks)));
  }

  private answer(req: Http2ServerRequest, res: Http2ServerResponse, body: Buffer): void {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!name.startsWith(':') && value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
    }
    const path = req.headers[':path'] ?? '';
    const deviceToken = decodeURIComponent(/^\/3\/device\/([^/?]*)$/.exec(path)?.[1] ?? '');
    let payload: unknown;
    try {
      payload = JSON.parse(body.toString('utf8'));
    } catch {
      payload = undefined;
    }
    const jwt = decodeJwt(headers.authorization);
    const record: SimulatedRequest = {
      deviceToken,
      headers,
      payload,
      jwtHeader: jwt?.header,
      jwtClaims: jwt?.claims,
      answer: 200,
    };
    this.requests.push(record);

    const refusal = this.check(req, headers, deviceToken, body, payload, jwt);
    if (refusal) {
      record.answer = refusal.status;
      reply(res, refusal.status, refusal.reason);
      return;
    }
    const scripted = this.perToken.get(deviceToken) ?? this.next.shift();
    if (scripted === undefined) {
      reply(res, 200);
      return;
    }
    if (typeof scripted === 'object') {
      record.answer = scripted.status;
      reply(res, scripted.status, scripted.reason, scripted.timestamp);
      return;
    }
    record.answer = scripted;
    switch (scripted) {
      case 'refuse-stream':
        res.stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        return;
      case 'reset-stream':
        res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        return;
      case 'drop-connection':
        res.stream.session?.destroy();
        return;
      case 'goaway': {
        // Apple closes a connection with GOAWAY (e.g. Shutdown); the stream in flight is not processed.
        const session = res.stream.session;
        session?.goaway(http2.constants.NGHTTP2_NO_ERROR, 0);
        res.stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        return;
      }
      case 'hang':
        this.hanging.add(res);
        res.on('close', () => this.hanging.delete(res));
        return;
    }
  }

  /** Apple's checks, in the order its documentation lists the errors; undefined when the request is valid. */
  private check(
    req: Http2ServerRequest,
    headers: Record<string, string>,
    deviceToken: string,
    body: Buffer,
    payload: unknown,
    jwt: DecodedJwt | undefined,
  ): { status: number; reason: string } | undefined {
    if (!headers.authorization) return { status: 403, reason: 'MissingProviderToken' };
    if (!jwt || !this.validSignature(jwt)) return { status: 403, reason: 'InvalidProviderToken' };
    if (jwt.header.alg !== 'ES256' || jwt.header.kid !== this.options.keyId || jwt.claims.iss !== this.options.teamId) {
      return { status: 403, reason: 'InvalidProviderToken' };
    }
    const iat = jwt.claims.iat;
    const nowS = Math.floor((this.options.now ?? Date.now)() / 1000);
    if (typeof iat !== 'number' || !Number.isInteger(iat) || iat > nowS + 60) {
      return { status: 403, reason: 'InvalidProviderToken' };
    }
    if (nowS - iat > MAX_TOKEN_AGE_S) return { status: 403, reason: 'ExpiredProviderToken' };
    if (req.headers[':method'] !== 'POST') return { status: 405, reason: 'MethodNotAllowed' };
    if (!/^\/3\/device\/[^/?]*$/.test(req.headers[':path'] ?? '')) return { status: 404, reason: 'BadPath' };
    if (!/^[0-9a-f]{64,200}$/.test(deviceToken)) return { status: 400, reason: 'BadDeviceToken' };
    const topic = headers['apns-topic'];
    if (!topic) return { status: 400, reason: 'MissingTopic' };
    if (this.options.allowedTopics && !this.options.allowedTopics.includes(topic)) {
      return { status: 400, reason: 'TopicDisallowed' };
    }
    const pushType = headers['apns-push-type'];
    if (!pushType || !PUSH_TYPES.has(pushType)) return { status: 400, reason: 'InvalidPushType' };
    if (pushType === 'voip' && !topic.endsWith('.voip')) return { status: 400, reason: 'DeviceTokenNotForTopic' };
    if (pushType === 'liveactivity' && !topic.endsWith('.push-type.liveactivity')) {
      return { status: 400, reason: 'DeviceTokenNotForTopic' };
    }
    if (pushType === 'location' && !topic.endsWith('.location-query')) {
      return { status: 400, reason: 'DeviceTokenNotForTopic' };
    }
    const priority = headers['apns-priority'];
    if (priority !== undefined && !['1', '5', '10'].includes(priority)) return { status: 400, reason: 'BadPriority' };
    if (pushType === 'background' && priority === '10') return { status: 400, reason: 'BadPriority' };
    const expiration = headers['apns-expiration'];
    if (expiration !== undefined && !/^\d+$/.test(expiration)) return { status: 400, reason: 'BadExpirationDate' };
    const collapseId = headers['apns-collapse-id'];
    if (collapseId !== undefined && Buffer.byteLength(collapseId) > 64) return { status: 400, reason: 'BadCollapseId' };
    if (body.length === 0) return { status: 400, reason: 'PayloadEmpty' };
    if (body.length > (pushType === 'voip' ? MAX_VOIP_PAYLOAD_BYTES : MAX_PAYLOAD_BYTES)) {
      return { status: 413, reason: 'PayloadTooLarge' };
    }
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
      return { status: 400, reason: 'PayloadEmpty' };
    }
    return undefined;
  }

  private validSignature(jwt: DecodedJwt): boolean {
    try {
      return verify(
        'sha256',
        Buffer.from(jwt.signingInput),
        { key: this.publicKey, dsaEncoding: 'ieee-p1363' },
        Buffer.from(jwt.signature, 'base64url'),
      );
    } catch {
      return false;
    }
  }
}

interface DecodedJwt {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  signingInput: string;
  signature: string;
}

function decodeJwt(authorization: string | undefined): DecodedJwt | undefined {
  const match = /^bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/i.exec(authorization ?? '');
  if (!match) return undefined;
  const [, header, claims, signature] = match as unknown as [string, string, string, string];
  try {
    const h: unknown = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
    const c: unknown = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8'));
    if (!isRecord(h) || !isRecord(c)) return undefined;
    return { header: h, claims: c, signingInput: `${header}.${claims}`, signature };
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function reply(res: Http2ServerResponse, status: number, reason?: string, timestamp?: number): void {
  res.setHeader('apns-id', '00000000-0000-4000-8000-000000000000');
  if (status === 200) {
    res.writeHead(200);
    res.end();
    return;
  }
  const body: Record<string, unknown> = { reason };
  // Apple adds the time it learnt the token was invalid to 410 answers.
  if (status === 410) body.timestamp = timestamp ?? Date.now();
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** A throwaway self-signed certificate for localhost and 127.0.0.1 (openssl; P-256). */
export function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'apns-sim-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '2',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
