import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { ProfileScope } from '../../notifier/notifier.js';

/** The Codex sign-in a subscription call sends; never answered or logged. */
export interface CodexSignIn {
  /** The OAuth access token, sent as the bearer. */
  bearer: string;
  /** The ChatGPT account the token belongs to, sent as `ChatGPT-Account-Id`. */
  accountId: string;
}

/**
 * What the host's auth.json holds for OpenAI Codex: a usable sign-in, one that has expired (Hermes
 * renews it the next time it uses it), one without a ChatGPT account id, or none at all.
 */
export type CodexSignInLookup =
  { state: 'ready'; signIn: CodexSignIn } | { state: 'expired' } | { state: 'no_account' } | { state: 'missing' };

/**
 * The Codex sign-in as `hermes auth` (OpenAI Codex, provider id `openai-codex`) stores it in
 * `auth.json`: the provider's singleton entry (`providers["openai-codex"].tokens`), else the pooled
 * entries (`credential_pool["openai-codex"]`, each with `access_token`, or `tokens.access_token`).
 * Only the fields read here are described.
 */
const tokenFields = z.object({
  access_token: z.string().min(1),
  account_id: z.string().min(1).optional().catch(undefined),
});
const authFile = z.object({
  providers: z.record(z.string(), z.unknown()).optional(),
  credential_pool: z.record(z.string(), z.unknown()).optional(),
});
const singleton = z.object({ tokens: tokenFields });
const pool = z.array(z.unknown());

const CODEX_PROVIDER = 'openai-codex';
/** The claim OpenAI's auth service puts the ChatGPT account id under. */
const OPENAI_AUTH_CLAIM = 'https://api.openai.com/auth';

/** A sign-in whose JWT expires within this margin is not offered: the call would fail mid-setup. */
const EXPIRY_MARGIN_MS = 60_000;

const claimsSchema = z.object({
  exp: z.number().optional().catch(undefined),
  [OPENAI_AUTH_CLAIM]: z
    .object({ chatgpt_account_id: z.string().min(1).optional().catch(undefined) })
    .optional()
    .catch(undefined),
});

function jwtClaims(token: string): z.output<typeof claimsSchema> | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims = claimsSchema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    return claims.success ? claims.data : undefined;
  } catch {
    return undefined;
  }
}

type Candidate = z.output<typeof tokenFields>;

function judge(candidate: Candidate, nowMs: number): CodexSignInLookup {
  const claims = jwtClaims(candidate.access_token);
  if (claims?.exp !== undefined && claims.exp * 1000 <= nowMs + EXPIRY_MARGIN_MS) return { state: 'expired' };
  // A stored account id wins: Hermes keeps it beside the token when the id token named it.
  const accountId = candidate.account_id ?? claims?.[OPENAI_AUTH_CLAIM]?.chatgpt_account_id;
  if (!accountId) return { state: 'no_account' };
  return { state: 'ready', signIn: { bearer: candidate.access_token, accountId } };
}

function candidatesIn(text: string): Candidate[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const file = authFile.safeParse(parsed);
  if (!file.success) return [];
  const found: Candidate[] = [];
  const own = singleton.safeParse(file.data.providers?.[CODEX_PROVIDER]);
  if (own.success) found.push(own.data.tokens);
  const pooled = pool.safeParse(file.data.credential_pool?.[CODEX_PROVIDER]);
  if (pooled.success) {
    for (const entry of pooled.data) {
      const flat = tokenFields.safeParse(entry);
      if (flat.success) {
        found.push(flat.data);
        continue;
      }
      const nested = singleton.safeParse(entry);
      if (nested.success) found.push(nested.data.tokens);
    }
  }
  return found;
}

async function readOptional(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/** Which lookup explains best why nothing is usable: an expired sign-in beats one without an account. */
const RANK: Record<CodexSignInLookup['state'], number> = { ready: 3, expired: 2, no_account: 1, missing: 0 };

/**
 * The Codex sign-in a subscription call uses: the profile's auth.json, else the root one the profiles
 * share; the first usable entry wins. It is read as Hermes left it and never refreshed: Codex refresh
 * tokens are single use, and rotating one here would sign Hermes itself out.
 */
export async function codexSignIn(
  hermesHome: string,
  profile: ProfileScope,
  nowMs: number,
): Promise<CodexSignInLookup> {
  const homes = profile.home === hermesHome ? [hermesHome] : [profile.home, hermesHome];
  let best: CodexSignInLookup = { state: 'missing' };
  for (const home of homes) {
    const text = await readOptional(path.join(home, 'auth.json'));
    if (text === null) continue;
    for (const candidate of candidatesIn(text)) {
      const lookup = judge(candidate, nowMs);
      if (lookup.state === 'ready') return lookup;
      if (RANK[lookup.state] > RANK[best.state]) best = lookup;
    }
  }
  return best;
}
