/**
 * An in-process AgentBackend for tests and benchmarks: each turn's events come from a script.
 * The default script answers instantly with a fixed reply.
 */
import type {
  AgentBackend,
  AgentTurn,
  ApprovalChoice,
  ReactionNotice,
  TurnEvent,
  TurnRequest,
} from './agent-backend.js';

export type TurnScript = (request: TurnRequest, approvals: AsyncIterable<ApprovalChoice>) => AsyncIterable<TurnEvent>;

export class ScriptedAgentBackend implements AgentBackend {
  readonly turns: TurnRequest[] = [];
  readonly approvals: { runId: string; choice: ApprovalChoice; requestId: string | null }[] = [];
  readonly reactions: ReactionNotice[] = [];
  readonly stopped: string[] = [];
  private readonly waiting = new Map<string, (c: ApprovalChoice) => void>();
  /** Answers that came before the script asked for one, in order, per run. */
  private readonly early = new Map<string, ApprovalChoice[]>();
  private readonly runsByKey = new Map<string, string>();
  private seq = 0;

  constructor(private readonly script: TurnScript = instantReply('ok')) {}

  async startTurn(request: TurnRequest): Promise<AgentTurn> {
    this.turns.push(request);
    const runId = this.runsByKey.get(request.idempotencyKey) ?? `run_${++this.seq}`;
    this.runsByKey.set(request.idempotencyKey, runId);
    const waiting = this.waiting;
    const approvals: AsyncIterable<ApprovalChoice> = {
      [Symbol.asyncIterator]: () => ({
        next: () => {
          const ready = this.early.get(runId)?.shift();
          if (ready !== undefined) return Promise.resolve({ value: ready, done: false });
          return new Promise((resolve) => waiting.set(runId, (c) => resolve({ value: c, done: false })));
        },
      }),
    };
    return { runId, events: this.script(request, approvals) };
  }

  async approve(runId: string, choice: ApprovalChoice, requestId: string | null): Promise<void> {
    this.approvals.push({ runId, choice, requestId });
    const w = this.waiting.get(runId);
    this.waiting.delete(runId);
    // An answer can arrive before the script waits for it (the prompt is sent first): keep it.
    if (w === undefined) this.early.set(runId, [...(this.early.get(runId) ?? []), choice]);
    else w(choice);
  }

  async stop(runId: string): Promise<void> {
    this.stopped.push(runId);
  }

  onReaction = async (notice: ReactionNotice): Promise<void> => {
    this.reactions.push(notice);
  };
}

/** A script that completes at once with `output` (or a function of the input). */
export function instantReply(output: string | ((input: string) => string)): TurnScript {
  return async function* (request) {
    yield { kind: 'completed', output: typeof output === 'string' ? output : output(request.input) };
  };
}
