/**
 * AgentBackend over the Hermes API server (spec/hermes/SURFACES.md §1): `POST /v1/runs` (202
 * {run_id}), `GET /v1/runs/{id}/events` (SSE `data: {json}` frames), `POST /v1/runs/{id}/approval`,
 * `POST /v1/runs/{id}/stop`. The run's Idempotency-Key comes from the inbound Relay event, so a turn
 * replayed after a crash re-attaches to the same run instead of starting a second one.
 */
import { z } from 'zod';
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

const runCreated = z.looseObject({ run_id: z.string().min(1) });
const sseEvent = z.looseObject({ event: z.string() });

/** Parses an SSE byte stream into the JSON of its `data:` fields (comments and ids skipped). */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data === '' || data === '[DONE]') continue;
      try {
        yield JSON.parse(data) as unknown;
      } catch {
        // A malformed frame is skipped; the run's terminal event still decides the outcome.
      }
    }
  }
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

export interface RunInputMessage {
  role: 'user';
  content: ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } })[];
}

export class HermesRunsBackend implements AgentBackend {
  private readonly o: HermesRunsBackendOptions;
  private readonly fetchImpl: typeof fetch;

  constructor(options: HermesRunsBackendOptions) {
    this.o = options;
    this.fetchImpl = options.fetch ?? fetch;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      ...(this.o.apiKey !== null ? { Authorization: `Bearer ${this.o.apiKey}` } : {}),
      ...extra,
    };
  }

  async startTurn(request: TurnRequest): Promise<AgentTurn> {
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.o.baseUrl}/v1/runs`, {
        method: 'POST',
        headers: this.headers({
          'Content-Type': 'application/json',
          'Idempotency-Key': request.idempotencyKey,
          'X-Hermes-Session-Id': request.sessionId,
        }),
        body: JSON.stringify({
          input: runInput(request),
          session_id: request.sessionId,
          ...(request.instructions !== undefined ? { instructions: request.instructions } : {}),
        }),
      });
    } catch (err) {
      throw new AgentTurnError(`Hermes API server unreachable: ${(err as Error).message}`);
    }
    if (res.status === 409) {
      // The key names a run with another body (a turn started by an older connector, before the
      // run body changed): that run cannot be re-attached, so the retry starts a new run.
      await res.body?.cancel();
      throw new AgentRunFailedError('Hermes has a run with this Idempotency-Key and another body (HTTP 409)');
    }
    if (res.status !== 202 && res.status !== 200) {
      await res.body?.cancel();
      throw new AgentTurnError(`Hermes refused the run: HTTP ${res.status}`);
    }
    const created = runCreated.safeParse(await res.json().catch(() => null));
    if (!created.success) throw new AgentTurnError('Hermes answered a run without run_id');
    const runId = created.data.run_id;
    return { runId, events: this.events(runId) };
  }

  private async *events(runId: string): AsyncGenerator<TurnEvent> {
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.o.baseUrl}/v1/runs/${encodeURIComponent(runId)}/events`, {
        headers: this.headers({ Accept: 'text/event-stream' }),
      });
    } catch (err) {
      throw new AgentTurnError(`Hermes events unreachable: ${(err as Error).message}`);
    }
    if (!res.ok || res.body === null) throw new AgentTurnError(`Hermes events: HTTP ${res.status}`);
    for await (const raw of readSse(res.body)) {
      const ev = sseEvent.safeParse(raw);
      if (!ev.success) continue;
      const e = ev.data;
      switch (e.event) {
        case 'approval.request':
          yield {
            kind: 'approval',
            requestId: typeof e['request_id'] === 'string' ? e['request_id'] : null,
            command: typeof e['command'] === 'string' ? e['command'] : '',
            description: typeof e['description'] === 'string' ? e['description'] : '',
          };
          break;
        case 'run.completed':
          yield { kind: 'completed', output: typeof e['output'] === 'string' ? e['output'] : '' };
          return;
        case 'run.failed':
          yield { kind: 'failed', error: typeof e['error'] === 'string' ? e['error'] : 'run failed' };
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
    const res = await this.fetchImpl(`${this.o.baseUrl}/v1/runs/${encodeURIComponent(runId)}/approval`, {
      method: 'POST',
      headers: this.headers({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ choice, ...(requestId !== null ? { request_id: requestId } : {}) }),
    });
    await res.body?.cancel();
    if (!res.ok) throw new AgentTurnError(`Hermes approval: HTTP ${res.status}`);
  }

  async stop(runId: string): Promise<void> {
    const res = await this.fetchImpl(`${this.o.baseUrl}/v1/runs/${encodeURIComponent(runId)}/stop`, {
      method: 'POST',
      headers: this.headers(),
    });
    await res.body?.cancel();
  }
}
