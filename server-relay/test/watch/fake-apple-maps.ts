import { createPublicKey, verify } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for Apple's Maps token endpoint (GET /v1/token): it verifies the ES256 JWT with
 * the Maps key's public half, checks kid, typ, iss and lifetime, and answers Apple's body.
 */
export class FakeAppleMaps {
  calls = 0;
  failWith: number | undefined;
  lastClaims: Record<string, unknown> | undefined;
  lastHeader: Record<string, unknown> | undefined;
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(publicPem: string, keyId: string, teamId: string): Promise<FakeAppleMaps> {
    const publicKey = createPublicKey(publicPem);
    const holder: { fake?: FakeAppleMaps } = {};
    const server = createServer((req, res) => {
      const fake = holder.fake!;
      fake.calls += 1;
      const jwt = /^Bearer ([\w-]+)\.([\w-]+)\.([\w-]+)$/.exec(req.headers.authorization ?? '');
      const deny = (status: number) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'Not Authorized' } }));
      };
      if (req.method !== 'GET' || req.url !== '/v1/token' || !jwt) return deny(401);
      const [, h, c, s] = jwt as unknown as [string, string, string, string];
      const valid = verify(
        'sha256',
        Buffer.from(`${h}.${c}`),
        { key: publicKey, dsaEncoding: 'ieee-p1363' },
        Buffer.from(s, 'base64url'),
      );
      const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as Record<string, unknown>;
      const claims = JSON.parse(Buffer.from(c, 'base64url').toString()) as Record<string, unknown>;
      fake.lastHeader = header;
      fake.lastClaims = claims;
      if (!valid || header.alg !== 'ES256' || header.kid !== keyId || header.typ !== 'JWT' || claims.iss !== teamId)
        return deny(401);
      if (typeof claims.exp !== 'number' || typeof claims.iat !== 'number' || claims.exp <= claims.iat)
        return deny(401);
      if (fake.failWith) return deny(fake.failWith);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ accessToken: `maps-access-${fake.calls}`, expiresInSeconds: 1800 }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const fake = new FakeAppleMaps(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/token`);
    holder.fake = fake;
    return fake;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
