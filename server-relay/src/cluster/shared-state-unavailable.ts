/**
 * The replicas' shared store (Redis) could not answer: the relay refuses what needs it with
 * `503 {"error":"shared_state_unavailable"}` and `retry-after: 1` rather than guess (a guess would
 * push a duplicate or let a budget run over), and serves again as soon as it answers.
 */
export class SharedStateUnavailable extends Error {
  constructor(reason: string) {
    super(`shared state unavailable: ${reason}`);
    this.name = 'SharedStateUnavailable';
  }
}

export const SHARED_STATE_UNAVAILABLE_BODY = { error: 'shared_state_unavailable' } as const;
