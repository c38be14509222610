import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';

/** The address per-IP limits count: X-Forwarded-For's first entry behind a trusted proxy, else the socket's. */
export function clientIp(request: FastifyRequest, trustProxy: boolean): string {
  if (trustProxy) {
    const header = request.headers['x-forwarded-for'];
    const first = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim();
    if (first && isIP(first)) return first;
  }
  return request.socket.remoteAddress ?? 'unknown';
}
