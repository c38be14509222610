/**
 * AgentBackend over the Hermes API server (spec/hermes/SURFACES.md §1), through the suite's one
 * Hermes API client (contracts/src/hermes/api-client.ts): a turn is a run, its lifecycle events (as
 * contracts/src/hermes/runs.ts declares them) become TurnEvents, and the client's answers become the
 * backend's errors. The run's Idempotency-Key comes from the inbound Relay event, so a turn replayed
 * after a crash re-attaches to the same run instead of starting a second one.
 */
import { hermesApiClient, type HermesApi, type RunInputMessage } from '@conduit/contracts/hermes/api-client';
import {
  AgentRunFailedError,
  AgentTurnError,
  type AgentBackend,
  type AgentTurn,
  type ApprovalChoice,
  type TurnEvent,
  type TurnRequest,
} from './agent-backend.js';

export interface HermesRunsBackendOptions {
  /** e.g. http://127.0.0.1:8642 (or .../p/<profile> for a secondary profile). */
  baseUrl: string;
  apiKey: string | null;
  fetch?: typeof fetch;
}

/**
 * The run's `input`: the words as a string, or, when the person sent images, one user message whose
 * content is the words and each image as a data URL (the OpenAI-style message list /v1/runs takes).
 * Deterministic, so a replayed turn posts the same body and re-attaches to its run.
 */
export function runInput(request: TurnRequest): string | RunInputMessage[] {
  const images = request.images ?? [];
  if (images.length === 0) return request.input;
  return [
    {
      role: 'user',
      content: [
        { type: 'text', text: request.input },
        ...images.map((img) => ({
          type: 'image_url' as const,
          image_url: { url: `data:${img.contentType};base64,${Buffer.from(img.bytes).toString('base64')}` },
        })),
      ],
    },
  ];
}

export class HermesRunsBackend implements AgentBackend {
  private readonly api: HermesApi;

  constructor(options: HermesRunsBackendOptions) {
    this.api = hermesApiClient({
      url: options.baseUrl,
      key: options.apiKey,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  async startTurn(request: TurnRequest): Promise<AgentTurn> {
    const started = await this.api.startRun(
      {
        input: runInput(request),
        session_id: request.sessionId,
        ...(request.instructions !== undefined ? { instructions: request.instructions } : {}),
      },
      { idempotencyKey: request.idempotencyKey, sessionId: request.sessionId },
    );
    switch (started.outcome) {
      case 'started':
        return { runId: started.runId, events: this.events(started.runId) };
      case 'key_conflict':
        // The key names a run with another body (a turn started by an older connector, before the
        // run body changed): that run cannot be re-attached, so the retry starts a new run.
        throw new AgentRunFailedError('Hermes has a run with this Idempotency-Key and another body (HTTP 409)');
      case 'refused':
        throw new AgentTurnError(`Hermes refused the run: HTTP ${started.status}`);
      case 'malformed':
        throw new AgentTurnError('Hermes answered a run without run_id');
      case 'unreachable':
        throw new AgentTurnError(`Hermes API server unreachable: ${started.reason}`);
    }
  }

  private async *events(runId: string): AsyncGenerator<TurnEvent> {
    const stream = await this.api.runEvents(runId);
    if (stream.outcome === 'unreachable') throw new AgentTurnError(`Hermes events unreachable: ${stream.reason}`);
    if (stream.outcome === 'refused') throw new AgentTurnError(`Hermes events: HTTP ${stream.status}`);
    for await (const e of stream.events) {
      switch (e.event) {
        case 'approval.request':
          yield {
            kind: 'approval',
            requestId: e.request_id ?? null,
            command: e.command ?? '',
            description: e.description ?? '',
          };
          break;
        case 'run.completed':
          yield {
            kind: 'completed',
            output: e.output ?? '',
            ...(e.pending_steer ? { pendingSteer: e.pending_steer } : {}),
          };
          return;
        case 'run.failed':
          yield { kind: 'failed', error: e.error ?? 'run failed' };
          return;
        case 'run.cancelled':
          yield { kind: 'cancelled' };
          return;
        default:
          // message.delta, tool.* and reasoning events: tool progress is never shown on Relay.
          break;
      }
    }
    throw new AgentTurnError('Hermes event stream ended before the run finished');
  }

  async approve(runId: string, choice: ApprovalChoice, requestId: string | null): Promise<void> {
    const answered = await this.api.answerApproval(runId, choice, requestId ?? undefined);
    if (answered !== 'accepted') throw new AgentTurnError(`Hermes approval: ${answered}`);
  }

  async stop(runId: string): Promise<void> {
    await this.api.stopRun(runId);
  }

  async steer(runId: string, text: string): Promise<boolean> {
    return (await this.api.steerRun(runId, text)) === 'accepted';
  }
}
