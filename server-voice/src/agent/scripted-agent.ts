import type { AgentBackend, AgentEvent, AgentTurn } from './agent-backend.js';
import { AgentError } from './agent-backend.js';

/** One step of a scripted reply. */
export type ScriptStep =
  | { delta: string }
  | { snapshot: string }
  | {
      tool: string;
      arguments: string;
      /** Text appended with the tool's output, e.g. 'It is {output}.' */ then?: string;
    }
  | { waitMs: number }
  | { fail: string };

/**
 * A backend that plays scripts, for tests and benchmarks: `script(text)` chooses the steps for each turn.
 * It behaves like a network agent (honours abort, yields between steps) and records what it was asked.
 */
export class ScriptedAgent implements AgentBackend {
  readonly label = 'scripted';
  readonly turns: AgentTurn[] = [];
  readonly toolOutputs: string[] = [];

  constructor(private readonly script: (text: string) => ScriptStep[]) {}

  async *respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    this.turns.push(turn);
    let text = '';
    for (const step of this.script(turn.text)) {
      if (turn.signal.aborted) throw new AgentError('cancelled');
      if ('delta' in step) {
        text += step.delta;
        yield { type: 'delta', text: step.delta };
      } else if ('snapshot' in step) {
        text = step.snapshot;
        yield { type: 'snapshot', text: step.snapshot };
      } else if ('tool' in step) {
        const output = await turn.callTool(step.tool, step.arguments);
        this.toolOutputs.push(output);
        if (step.then) {
          const added = step.then.replace('{output}', output);
          text += added;
          yield { type: 'delta', text: added };
        }
      } else if ('waitMs' in step) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, step.waitMs);
          turn.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        });
      } else {
        throw new AgentError(step.fail);
      }
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return text;
  }

  endSession(): void {}
}
