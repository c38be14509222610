import { hookArg, type HookPayload } from '../../bridge/hook-payload.js';

/**
 * How full a model request's context is, from Hermes' `pre_api_request` / `post_api_request` hooks:
 * the tokens the request sends and the model's context window. Hermes versions differ in what they
 * pass, so each is read from whichever field this version has, and either may be unknown:
 * - the window: `context_length` (what Hermes' context compressor works against), or the
 *   `context_window` / `context_window_limit` some builds pass;
 * - the tokens: the answered request's `usage` (prompt tokens, or input plus cached tokens where the
 *   provider counts those apart), else the request's own estimate, `approx_input_tokens`.
 */
export interface ContextUse {
  usedTokens: number | undefined;
  windowTokens: number | undefined;
}

const WINDOW_FIELDS = ['context_length', 'context_window', 'context_window_limit'] as const;

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function usageTokens(usage: unknown): number | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const fields = usage as Record<string, unknown>;
  const prompt = count(fields.prompt_tokens);
  if (prompt !== undefined && prompt > 0) return prompt;
  const input = count(fields.input_tokens);
  if (input === undefined) return undefined;
  // Anthropic-style usage counts cached prompt tokens apart from input_tokens; all of them fill the context.
  return input + (count(fields.cache_read_tokens) ?? 0) + (count(fields.cache_write_tokens) ?? 0);
}

export function contextUseOf(payload: HookPayload): ContextUse | null {
  let windowTokens: number | undefined;
  for (const field of WINDOW_FIELDS) {
    const value = count(hookArg(payload, field));
    if (value !== undefined && value > 0) {
      windowTokens = value;
      break;
    }
  }
  const usedTokens = usageTokens(hookArg(payload, 'usage')) ?? count(hookArg(payload, 'approx_input_tokens'));
  if (usedTokens === undefined && windowTokens === undefined) return null;
  return { usedTokens, windowTokens };
}

/** The Lock Screen's percentage, 0–100. */
export function contextPercent(usedTokens: number, windowTokens: number): number {
  return Math.max(0, Math.min(100, Math.round((usedTokens / windowTokens) * 100)));
}
