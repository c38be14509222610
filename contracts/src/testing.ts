import net from 'node:net';

/**
 * A TCP port free on 127.0.0.1 right now, for tests, benches and launchers that start real server
 * processes (the OS picks it; a tiny race with other binders remains, as with any such probe).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
