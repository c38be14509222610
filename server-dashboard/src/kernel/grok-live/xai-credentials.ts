import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { ProfileScope } from '../../notifier/notifier.js';
import type { ProfileFiles } from '../profile-files.js';

/** Which xAI credential a call uses: the SuperGrok sign-in, or the API key. Never the value itself. */
export type XaiAuth = 'subscription' | 'api_key';

export interface XaiCredential {
  auth: XaiAuth;
  /** The bearer sent to xAI; never answered or logged. */
  bearer: string;
}

/**
 * The xAI sign-in as `hermes auth add xai-oauth` stores it in `auth.json`: the provider's singleton
 * entry (`providers["xai-oauth"].tokens.access_token`), else the first pooled entry with an access
 * token (`credential_pool["xai-oauth"]`). Only the fields read here are described.
 */
const tokenEntry = z.object({ access_token: z.string().min(1) });
const authFile = z.object({
  providers: z.record(z.string(), z.unknown()).optional(),
  credential_pool: z.record(z.string(), z.unknown()).optional(),
});
const singleton = z.object({ tokens: tokenEntry });
const pool = z.array(z.unknown());

const XAI_OAUTH = 'xai-oauth';

/** A sign-in whose JWT says it has expired (or expires within this margin) is not offered to xAI. */
const EXPIRY_MARGIN_MS = 60_000;

function expired(token: string, nowMs: number): boolean {
  const payload = token.split('.')[1];
  if (payload === undefined) return false; // not a JWT: xAI decides
  try {
    const claims = z
      .object({ exp: z.number() })
      .safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    return claims.success && claims.data.exp * 1000 <= nowMs + EXPIRY_MARGIN_MS;
  } catch {
    return false;
  }
}

function signInFrom(text: string, nowMs: number): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const file = authFile.safeParse(parsed);
  if (!file.success) return undefined;
  const candidates: string[] = [];
  const own = singleton.safeParse(file.data.providers?.[XAI_OAUTH]);
  if (own.success) candidates.push(own.data.tokens.access_token);
  const pooled = pool.safeParse(file.data.credential_pool?.[XAI_OAUTH]);
  if (pooled.success) {
    for (const entry of pooled.data) {
      const token = tokenEntry.safeParse(entry);
      if (token.success) candidates.push(token.data.access_token);
    }
  }
  return candidates.find((token) => !expired(token, nowMs));
}

async function readOptional(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * The credential a Grok Live call uses, in the order Hermes uses for its other xAI endpoints: the
 * SuperGrok sign-in (the profile's auth.json, else the root one the profiles share), else
 * XAI_API_KEY from the profile's environment. The sign-in is read as Hermes left it: refreshing it
 * would rotate Hermes' single-use refresh token, so an expired one is Hermes' to renew.
 */
export async function xaiCredential(
  hermesHome: string,
  profile: ProfileScope,
  files: ProfileFiles,
  nowMs: number,
): Promise<XaiCredential | null> {
  const homes = profile.home === hermesHome ? [hermesHome] : [profile.home, hermesHome];
  for (const home of homes) {
    const text = await readOptional(path.join(home, 'auth.json'));
    const token = text === null ? undefined : signInFrom(text, nowMs);
    if (token) return { auth: 'subscription', bearer: token };
  }
  const key = files.env('XAI_API_KEY');
  return key ? { auth: 'api_key', bearer: key } : null;
}
