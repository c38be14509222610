/**
 * Delay before the next attempt of an event that failed on the network or with a relay 5xx:
 * exponential from `baseMs`, capped at `maxMs`, with up to 20 % jitter so many spooled events do
 * not hit a recovering relay in lockstep. `random` is injected for tests.
 */
export function backoffDelayMs(
  attempt: number,
  policy: { baseMs: number; maxMs: number },
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, attempt - 1);
  const raw = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(exponent, 30));
  return Math.round(raw * (1 - 0.2 * random()));
}
