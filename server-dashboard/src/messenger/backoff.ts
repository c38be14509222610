/**
 * Reconnect backoff: full jitter, delay = random() × min(30 000 ms, 500 ms × 2^(attempt−1)).
 * Full jitter spreads a fleet of agents reconnecting after a Relay restart across the window.
 */
export const BACKOFF_BASE_MS = 500;
export const BACKOFF_CAP_MS = 30_000;

export function backoffCeilingMs(attempt: number): number {
  if (attempt < 1) return 0;
  // 2^(attempt-1) overflows into Infinity long after the cap; min() keeps it at 30 s.
  return Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
}

export function backoffDelayMs(attempt: number, random: () => number): number {
  return random() * backoffCeilingMs(attempt);
}
