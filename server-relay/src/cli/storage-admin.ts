import { createTRPCClient, httpLink, TRPCClientError, type TRPCClient } from '@trpc/client';
import { z } from 'zod';
import { RELAY_ADMIN_PREFIX, relayAdminProcedures as c } from '@conduit/contracts/relay/admin';
import type { RelayAdminRouter } from '../admin/admin-router.js';
import type { PruneResult, StorageStatus } from './storage.js';

/**
 * The storage commands through a running relay (README, Operator CLIs): with RELAY_ADMIN_URL (the
 * relay's base URL) and ADMIN_TOKEN set, storage:status and storage:prune-inactive ask the relay's
 * admin API, so the process that owns the database is the one that reads and trims it, and print what
 * the direct path prints. The token goes only into the Authorization header, never into a message.
 */

export class AdminApiError extends Error {}

const environment = z.object({
  RELAY_ADMIN_URL: z
    .string()
    .trim()
    .pipe(z.url({ protocol: /^https?$/ }))
    .transform((text) => new URL(text))
    // A base URL, nothing a token could be mixed with.
    .refine((url) => !url.username && !url.password && !url.search && !url.hash),
  ADMIN_TOKEN: z.string().trim().min(32),
});

const MESSAGES: Record<keyof z.infer<typeof environment>, string> = {
  RELAY_ADMIN_URL:
    "RELAY_ADMIN_URL must be the running relay's base URL, http(s) without credentials, query or fragment (https://push.example.com).",
  ADMIN_TOKEN: "RELAY_ADMIN_URL needs ADMIN_TOKEN, the relay's admin token (at least 32 characters).",
};

/** The storage commands' view of the admin API. */
export interface StorageAdmin {
  status(): Promise<StorageStatus>;
  /** The preview, or with apply the prune the relay runs after confirming the count it previewed. */
  prune(apply: boolean): Promise<PruneResult>;
}

/** The admin API named by RELAY_ADMIN_URL, authenticated by ADMIN_TOKEN (both checked here). */
export function storageAdmin(env: NodeJS.ProcessEnv): StorageAdmin {
  const parsed = environment.safeParse({ RELAY_ADMIN_URL: env.RELAY_ADMIN_URL, ADMIN_TOKEN: env.ADMIN_TOKEN ?? '' });
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path[0] === 'ADMIN_TOKEN' ? 'ADMIN_TOKEN' : 'RELAY_ADMIN_URL';
    throw new AdminApiError(MESSAGES[field]);
  }
  const base = parsed.data.RELAY_ADMIN_URL;
  const url = `${base.origin}${base.pathname.replace(/\/+$/, '')}${RELAY_ADMIN_PREFIX}`;
  const token = parsed.data.ADMIN_TOKEN;
  const client: TRPCClient<RelayAdminRouter> = createTRPCClient<RelayAdminRouter>({
    links: [
      httpLink({
        url,
        headers: { authorization: `Bearer ${token}` },
        // The bearer is for this address only: a redirect is an error, never followed.
        fetch: (input, init) => fetch(input, { ...init, redirect: 'error' }),
      }),
    ],
  });
  const ask = async <T>(call: () => Promise<unknown>, schema: z.ZodType<T>): Promise<T> => {
    let answer: unknown;
    try {
      answer = await call();
    } catch (error) {
      throw failure(error, url);
    }
    const checked = schema.safeParse(answer);
    if (!checked.success) throw new AdminApiError(`the relay admin API at ${url} answered something unreadable.`);
    return checked.data;
  };
  return {
    status: () => ask(() => client.storageStatus.query(), c.storageStatus.output),
    async prune(apply) {
      const preview = await ask(() => client.prunePreview.query(), c.prunePreview.output);
      if (!apply) return preview;
      // The relay removes only if the count is still the one previewed (else 409 with its reason).
      const expectEligible = preview.eligible;
      return ask(() => client.pruneApply.mutate({ expectEligible }), c.pruneApply.output);
    },
  };
}

/** The first `code` on an error's cause chain (undici puts ECONNREFUSED two levels down). */
function networkCode(error: unknown): string | null {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    if ('code' in current && typeof current.code === 'string') return current.code;
    current = 'cause' in current ? current.cause : null;
  }
  return null;
}

/** One line for the operator: what went wrong and what to change, never the token. */
function failure(error: unknown, url: string): AdminApiError {
  if (!(error instanceof TRPCClientError)) {
    return new AdminApiError(`the relay admin API call failed (${error instanceof Error ? error.name : 'unknown'}).`);
  }
  const clientError = error as TRPCClientError<RelayAdminRouter>;
  const response = clientError.meta?.response;
  const status = clientError.data?.httpStatus ?? (response instanceof Response ? response.status : undefined);
  if (status === 401) {
    return new AdminApiError(
      `the relay at ${url} refused ADMIN_TOKEN (401 unauthorized): it is not this relay's token.`,
    );
  }
  if (status === 404) {
    return new AdminApiError(
      `no relay admin API at ${url} (404): the relay serves it only when started with ADMIN_TOKEN, and RELAY_ADMIN_URL must be its base URL.`,
    );
  }
  if (status === undefined) {
    const code = networkCode(clientError.cause);
    return new AdminApiError(`the relay admin API at ${url} could not be reached (${code ?? clientError.message}).`);
  }
  // The relay's own reason (a 409 asks for a new preview); first line only.
  const reason = clientError.message.split('\n')[0]?.slice(0, 300) ?? '';
  return new AdminApiError(`the relay admin API at ${url} answered ${status}: ${reason}`);
}
