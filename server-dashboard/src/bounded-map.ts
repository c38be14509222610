/**
 * Sets `key` as the newest entry of an insertion-ordered map (an existing key moves to the end) and drops
 * the oldest entries beyond `max`. The host's in-memory bookkeeping uses it so a long-running service never
 * grows with every session, socket or profile it ever saw.
 */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value as K);
}
