import type { AgentBackend, AgentEvent } from '../agent/agent-backend.js';
import type { SetTimer } from '../protocol/realtime-protocol.js';

/** The display name when none is configured and the model gave none. */
export const DEFAULT_AGENT_NAME = 'Hermes';
/** How long the model may take to name the agent before the gateway joins as `Hermes`. */
export const NAME_QUESTION_TIMEOUT_MS = 10_000;
/** Longest name accepted (characters). */
const MAX_NAME_CHARS = 32;
/** An answer longer than this is no single name: stop reading it. */
const MAX_ANSWER_CHARS = 256;

export const NAME_QUESTION =
  'You are about to join a LiveKit voice conference room as a participant. Choose a first name for yourself ' +
  'that the people in the room will see. Answer with the name only: one word, letters only, nothing else.';

/** How the agent got its name: configured, the model's answer, or the fallback (and why). */
export type AgentNameSource =
  | { name: string; source: 'configured' }
  | { name: string; source: 'model' }
  | { name: string; source: 'fallback'; reason: 'timeout' | 'invalid' | 'failed' };

/**
 * The model's answer as a name, or null: one word of letters only (any script), at most 32 characters.
 * Surrounding whitespace, quotes and one closing full stop or exclamation mark are forgiven ("Mira." → Mira).
 */
export function agentNameFromAnswer(answer: string): string | null {
  const word = answer
    .trim()
    .replace(/^["'“‘`*]+/u, '')
    .replace(/["'”’`*]+$/u, '')
    .replace(/[.!]$/u, '')
    .replace(/["'”’`*]+$/u, '');
  if (!/^\p{L}+$/u.test(word) || [...word].length > MAX_NAME_CHARS) return null;
  return word;
}

/**
 * Asks the configured agent, once, for the name to show in the room (AUDIO.md §5: LiveKit asks the configured
 * model for a display name when none is set). The question is a turn of its own conversation (`sessionKey`,
 * forgotten afterwards), without tools, bounded by `timeoutMs`; any failure, a late answer or an answer that
 * is not a single name gives `Hermes`. Never rejects.
 */
export async function askAgentName(
  agent: AgentBackend,
  options: { sessionKey: string; timeoutMs?: number; setTimer: SetTimer },
): Promise<AgentNameSource> {
  const controller = new AbortController();
  const TIMED_OUT = Symbol('timed out');
  let timedOut = false;
  let expire: () => void = () => undefined;
  const expired = new Promise<typeof TIMED_OUT>((resolve) => {
    expire = () => resolve(TIMED_OUT);
  });
  const timer = options.setTimer(() => {
    timedOut = true;
    expire();
    controller.abort();
  }, options.timeoutMs ?? NAME_QUESTION_TIMEOUT_MS);
  const answer = async (): Promise<string> => {
    const reply = agent.respond({
      sessionKey: options.sessionKey,
      text: NAME_QUESTION,
      instructions: '',
      tools: [],
      toolChoice: 'none',
      signal: controller.signal,
      callTool: () => Promise.resolve(JSON.stringify({ error: 'no tools are available for this question' })),
    });
    let text = '';
    for (;;) {
      const next: IteratorResult<AgentEvent, string> = await reply.next();
      if (next.done) return typeof next.value === 'string' && next.value ? next.value : text;
      text = next.value.type === 'snapshot' ? next.value.text : text + next.value.text;
      if (text.length > MAX_ANSWER_CHARS) {
        controller.abort();
        return text;
      }
    }
  };
  try {
    // A backend that does not honour the abort still loses the race against the deadline.
    const result = await Promise.race([answer(), expired]);
    if (result === TIMED_OUT) return { name: DEFAULT_AGENT_NAME, source: 'fallback', reason: 'timeout' };
    const name = agentNameFromAnswer(result);
    return name ? { name, source: 'model' } : { name: DEFAULT_AGENT_NAME, source: 'fallback', reason: 'invalid' };
  } catch {
    return { name: DEFAULT_AGENT_NAME, source: 'fallback', reason: timedOut ? 'timeout' : 'failed' };
  } finally {
    timer.cancel();
    controller.abort();
    try {
      agent.endSession(options.sessionKey);
    } catch {
      // Nothing to forget.
    }
  }
}
