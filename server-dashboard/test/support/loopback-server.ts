import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** An HTTP server a test double runs on an ephemeral loopback port. */
export interface LoopbackServer {
  url: string;
  /** Drops open connections (held requests included) and stops listening. */
  close(): Promise<void>;
}

export async function listenOnLoopback(
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<LoopbackServer> {
  const server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A test double served over HTTP on loopback: subclasses answer each request in `handle`. */
export abstract class LoopbackDouble {
  private server: LoopbackServer | null = null;
  url = '';

  async start(): Promise<string> {
    this.server = await listenOnLoopback((req, res) => void this.handle(req, res));
    this.url = this.server.url;
    return this.url;
  }

  async stop(): Promise<void> {
    await this.server?.close();
  }

  protected abstract handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
}
