import type { AgentBackend, AgentEvent, AgentTurn } from './agent-backend.js';

/** What the echo agent says first, so nobody mistakes it for an assistant. */
export const ECHO_PREFIX = 'Echo agent, no assistant is configured. You said:';

/**
 * The default when no agent is configured: repeats the user's words, clearly labelled, streamed word by
 * word like a real agent, so a new user hears the whole path (capture, transcription, streaming speech).
 */
export class EchoAgent implements AgentBackend {
  readonly label = 'echo';

  async *respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    const reply = `${ECHO_PREFIX} ${turn.text}`;
    const words = reply.split(/(?<=\s)/);
    for (const word of words) {
      if (turn.signal.aborted) break;
      yield { type: 'delta', text: word };
      // Yield to the event loop between words, as a network stream would.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return reply;
  }

  endSession(): void {}
}
