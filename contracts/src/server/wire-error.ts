/**
 * A failure the wire defines: answered as `{"error": code, ...extra}` with its status.
 * Handlers throw it; one error handler per app turns it into the reply.
 */
export class WireError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(code);
    this.name = 'WireError';
  }

  body(): Record<string, unknown> {
    return { error: this.code, ...this.extra };
  }
}
