import { z } from 'zod';
import type { AgentBackend, AgentEvent, AgentTurn } from './agent-backend.js';
import { AgentError } from './agent-backend.js';
import { readSse } from './sse.js';

const runAccepted = z.object({ run_id: z.string().min(1).max(256) });
const runEvent = z.looseObject({
  event: z.string(),
  delta: z.string().optional(),
  output: z.unknown().optional(),
  error: z.unknown().optional(),
});

/**
 * The Hermes API server (SURFACES.md §1): `POST /v1/runs` starts a run in the call's own Hermes session,
 * `GET /v1/runs/{id}/events` streams it (`message.delta` → captions and speech, `run.completed` ends it),
 * and `POST /v1/runs/{id}/stop` interrupts it on cancel or barge-in. Hermes runs its own tools; client
 * function tools are not offered to it (Hermes has no way to call back into a client over this API).
 */
export class HermesRunsAgent implements AgentBackend {
  readonly label = 'hermes';

  constructor(private readonly options: { baseUrl: string; apiKey: string; fetch?: typeof fetch }) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
      ...extra,
    };
  }

  async *respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void> {
    const doFetch = this.options.fetch ?? fetch;
    const base = this.options.baseUrl;
    let runId: string;
    try {
      const started = await doFetch(`${base}/v1/runs`, {
        method: 'POST',
        headers: this.headers({ 'content-type': 'application/json', 'x-hermes-session-id': turn.sessionKey }),
        body: JSON.stringify({
          input: turn.text,
          session_id: turn.sessionKey,
          ...(turn.instructions ? { instructions: turn.instructions } : {}),
        }),
        signal: turn.signal,
      });
      if (started.status !== 202 && started.status !== 200)
        throw new AgentError(`Hermes refused the run (${started.status})`, started.status);
      const parsed = runAccepted.safeParse(await started.json());
      if (!parsed.success) throw new AgentError('Hermes answered the run without a run_id');
      runId = parsed.data.run_id;
    } catch (error) {
      if (error instanceof AgentError) throw error;
      throw new AgentError(turn.signal.aborted ? 'cancelled' : 'Hermes API server unreachable');
    }
    const stop = () =>
      void doFetch(`${base}/v1/runs/${encodeURIComponent(runId)}/stop`, { method: 'POST', headers: this.headers() })
        .then((response) => response.body?.cancel())
        .catch(() => undefined);
    turn.signal.addEventListener('abort', stop, { once: true });
    try {
      const events = await doFetch(`${base}/v1/runs/${encodeURIComponent(runId)}/events`, {
        headers: this.headers({ accept: 'text/event-stream' }),
        signal: turn.signal,
      });
      if (!events.ok || !events.body) throw new AgentError(`Hermes events answered ${events.status}`, events.status);
      let text = '';
      for await (const frame of readSse(events.body, turn.signal)) {
        let json: unknown;
        try {
          json = JSON.parse(frame.data);
        } catch {
          continue; // keepalive or a frame of a newer build we do not read
        }
        const parsed = runEvent.safeParse(json);
        if (!parsed.success) continue;
        const event = parsed.data;
        if (event.event === 'message.delta' && event.delta) {
          text += event.delta;
          yield { type: 'delta', text: event.delta };
        } else if (event.event === 'run.completed') {
          const output = typeof event.output === 'string' ? event.output : text;
          if (output !== text) yield { type: 'snapshot', text: output };
          return output;
        } else if (event.event === 'run.failed') {
          throw new AgentError('Hermes run failed');
        } else if (event.event === 'run.cancelled') {
          throw new AgentError('cancelled');
        }
      }
      if (turn.signal.aborted) throw new AgentError('cancelled');
      throw new AgentError('Hermes event stream ended before the run completed');
    } catch (error) {
      if (error instanceof AgentError) throw error;
      throw new AgentError(turn.signal.aborted ? 'cancelled' : 'Hermes event stream failed');
    } finally {
      turn.signal.removeEventListener('abort', stop);
    }
  }

  endSession(): void {}
}
