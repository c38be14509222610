/** A call-setup failure with its status and the exact plain-text body the contract defines. */
export class SetupError extends Error {
  override readonly name = 'SetupError';
  constructor(
    readonly status: 400 | 401 | 409 | 413 | 415 | 429,
    readonly text: string,
  ) {
    super(text);
  }
}
