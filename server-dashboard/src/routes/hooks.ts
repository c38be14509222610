import type { FastifyInstance } from 'fastify';
import { sameSecret } from '@conduit/contracts/server/secrets';
import { hookPayloadSchema } from '../bridge/hook-payload.js';
import { isLoopbackHost } from '../kernel/loopback.js';
import { profileOfHook } from '../fronting/profiles.js';
import type { Logger } from '../log.js';
import type { Notifier } from '../notifier/notifier.js';

/** Where the hook bridge posts; outside /api so it is never proxied and never mistaken for a plugin route. */
export const HOOK_PATH = '/_conduit/hook';
export const HOOK_TOKEN_HEADER = 'x-conduit-hook-token';

/**
 * The loopback endpoint `conduit hook` forwards Hermes' shell-hook JSON to. Only this machine, only
 * with the token of this boot. A malformed payload is logged without its content and answered 204:
 * the hook prints nothing and Hermes carries on.
 */
export function hookRoutes(
  app: FastifyInstance,
  options: { hermesHome: string; hookToken: string; bodyLimit: number; notifier: Notifier; log: Logger },
): void {
  app.post(
    HOOK_PATH,
    {
      bodyLimit: options.bodyLimit,
      // Decided from the socket and the headers before a byte of the (up to 8 MiB) body is read, so a
      // caller without the token cannot make this service buffer and parse anything.
      onRequest: async (request, reply) => {
        const remote = request.socket.remoteAddress ?? '';
        const token = request.headers[HOOK_TOKEN_HEADER];
        if (!isLoopbackHost(remote) || typeof token !== 'string' || !sameSecret(token, options.hookToken)) {
          return reply.status(401).header('connection', 'close').send({ error: 'unauthorized' });
        }
        return undefined;
      },
    },
    async (request, reply) => {
      const parsed = hookPayloadSchema.safeParse(request.body);
      if (!parsed.success) {
        options.log.warn('malformed hook payload dropped', { issues: parsed.error.issues.length });
        return reply.status(204).send();
      }
      const payload = parsed.data;
      const profile = profileOfHook(options.hermesHome, payload.profile);
      if (!profile) {
        options.log.warn('hook from an unknown profile dropped', { hook: payload.hook_event_name });
        return reply.status(204).send();
      }
      try {
        const answer = await options.notifier.handle(profile, payload);
        if (!answer) return reply.status(204).send();
        return reply.status(200).header('cache-control', 'no-store').send(answer);
      } catch (error) {
        options.log.error('hook handling failed', {
          hook: payload.hook_event_name,
          error: error instanceof Error ? error.name : 'error',
        });
        return reply.status(204).send();
      }
    },
  );
}
