import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnvelope } from '@conduit/contracts/crypto/e2e';

/**
 * A relay double for pairing tests that speaks spec/relay/API.md routes 9 (claim), 10 (events, with the
 * §1.1 envelope rules) and 14 (revoke) over real HTTP or HTTPS. Tests mint codes as the phone would,
 * script a redirect, and read every request it received (headers included).
 */
export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

export class PairingRelay {
  readonly received: Received[] = [];
  readonly events: Record<string, unknown>[] = [];
  /** Credentials issued and not revoked. */
  readonly live = new Set<string>();
  /** The `relay_url` a claim answers with; defaults to this server's own URL. */
  publicUrl: string | null = null;
  /** When set, every request is answered with this redirect. */
  redirectTo: string | null = null;
  /** When set, the next claim answers this status and error code. */
  claimFailure: { status: number; error: string } | null = null;
  /** When set, rewrites a successful claim answer before it is sent. */
  claimRewrite: ((answer: Record<string, string>) => Record<string, string>) | null = null;
  installationId = randomUUID();
  private readonly codes = new Set<string>();
  private server: http.Server | https.Server | null = null;
  url = '';

  async start(tls?: { key: string; cert: string }): Promise<string> {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => void this.handle(req, res);
    this.server = tls ? https.createServer(tls, handler) : http.createServer(handler);
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const port = (this.server.address() as AddressInfo).port;
    this.url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  /** A fresh code, as POST /v1/installations/:id/pairings would mint it. */
  mintCode(): string {
    const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
    const chars = Array.from(randomBytes(10), (b) => alphabet[b % alphabet.length]).join('');
    this.codes.add(chars);
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  }

  private reply(res: http.ServerResponse, status: number, body?: unknown) {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end(body === undefined ? '' : JSON.stringify(body));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = {};
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      return this.reply(res, 400, { error: 'invalid_json' });
    }
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    this.received.push({ method: req.method ?? '', path, headers: req.headers, body });
    if (this.redirectTo) {
      res.writeHead(307, { location: `${this.redirectTo}${path}` });
      return void res.end();
    }
    const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];

    if (req.method === 'POST' && path === '/v1/pairings/claim') {
      if (this.claimFailure) {
        const failure = this.claimFailure;
        this.claimFailure = null;
        return this.reply(res, failure.status, { error: failure.error });
      }
      const code = String(input.pairing_code ?? '')
        .replace(/[^A-Za-z0-9]/g, '')
        .toUpperCase();
      if (!this.codes.delete(code)) return this.reply(res, 404, { error: 'invalid_or_expired_pairing' });
      const gatewayId = randomUUID();
      const credential = `${this.installationId}.${gatewayId}.${randomBytes(32).toString('base64url')}`;
      this.live.add(credential);
      const answer = {
        installation_id: this.installationId,
        gateway_id: gatewayId,
        credential,
        relay_url: this.publicUrl ?? this.url,
      };
      return this.reply(res, 200, this.claimRewrite ? this.claimRewrite(answer) : answer);
    }
    if (!bearer || !this.live.has(bearer)) return this.reply(res, 401, { error: 'unauthorized' });
    if (req.method === 'DELETE' && path === '/v1/gateways/current') {
      this.live.delete(bearer);
      res.writeHead(204);
      return void res.end();
    }
    if (req.method === 'POST' && path === '/v1/events') {
      if (input.e2e !== undefined) {
        const envelope = e2eEnvelope.safeParse(input.e2e);
        if (!envelope.success || envelope.data.msg !== input.event_id)
          return this.reply(res, 400, { error: 'invalid_e2e' });
      }
      if (typeof input.event_id !== 'string' || !/^[A-Za-z0-9:_-]{8,128}$/.test(input.event_id)) {
        return this.reply(res, 400, { error: 'invalid_event_id' });
      }
      this.events.push(input);
      return this.reply(res, 202, { accepted: true, delivered: input.type !== 'plugin.hello' });
    }
    return this.reply(res, 404, { error: 'not_found' });
  }
}

/** A throwaway self-signed certificate for 127.0.0.1 (openssl, P-256). */
export function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'conduit-cert-'));
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
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
