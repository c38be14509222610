/**
 * The supported-Hermes-version check. Newer Hermes API servers report their version in
 * `GET /health` (`{"status":"ok","platform":"hermes-agent","version":"0.21.3"}`, no authentication);
 * older ones leave it out. The check only ever logs: a newer minor warns and the connector runs,
 * as the adapter seed asks, and an unreachable API server is the turns' problem, not the start's.
 */
import type { Logger } from './clock.js';

/** The oldest supported Hermes and the newest minor this connector was tested against. */
export const SUPPORTED_HERMES = { oldest: [0, 19, 0], testedThrough: [0, 21, 3] } as const;

/** How long the start waits for `/health` before going on without a version. */
export const VERSION_PROBE_TIMEOUT_MS = 5_000;

export type HermesVersionVerdict = 'supported' | 'older' | 'newer_minor' | 'unknown';

/** `0.21.3`, `v0.22.0`, `0.22.0.dev1` → [major, minor, patch]; anything else → null. */
export function parseHermesVersion(raw: unknown): [number, number, number] | null {
  if (typeof raw !== 'string') return null;
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(raw.trim());
  if (m === null) return null;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

export function judgeHermesVersion(version: [number, number, number] | null): HermesVersionVerdict {
  if (version === null) return 'unknown';
  const [major, minor] = version;
  const [oMajor, oMinor, oPatch] = SUPPORTED_HERMES.oldest;
  const [tMajor, tMinor] = SUPPORTED_HERMES.testedThrough;
  if (major < oMajor || (major === oMajor && (minor < oMinor || (minor === oMinor && version[2] < oPatch))))
    return 'older';
  // A newer patch of a tested minor is expected to keep the API server's surface.
  if (major > tMajor || (major === tMajor && minor > tMinor)) return 'newer_minor';
  return 'supported';
}

/** Reads the version from the API server and logs what it means. Never throws. */
export async function checkHermesVersion(options: {
  baseUrl: string;
  log: Logger;
  fetch?: typeof fetch;
}): Promise<HermesVersionVerdict> {
  const doFetch = options.fetch ?? fetch;
  let reported: unknown = null;
  try {
    const res = await doFetch(`${options.baseUrl.replace(/\/+$/, '')}/health`, {
      signal: AbortSignal.timeout(VERSION_PROBE_TIMEOUT_MS),
    });
    if (res.ok) reported = ((await res.json()) as { version?: unknown } | null)?.version ?? null;
  } catch (err) {
    options.log.warn('hermes version check: the API server did not answer /health', {
      error: (err as Error).message,
    });
    return 'unknown';
  }
  const verdict = judgeHermesVersion(parseHermesVersion(reported));
  const supported = `${SUPPORTED_HERMES.oldest.join('.')} through ${SUPPORTED_HERMES.testedThrough.join('.')}`;
  const fields = { hermes_version: typeof reported === 'string' ? reported : null, supported };
  if (verdict === 'newer_minor')
    options.log.warn(
      'hermes version is newer than the versions this connector was tested with; running anyway',
      fields,
    );
  else if (verdict === 'older')
    options.log.warn('hermes version is older than the oldest supported; running anyway', fields);
  else if (verdict === 'unknown') options.log.info('hermes version not reported by the API server', fields);
  else options.log.info('hermes version supported', fields);
  return verdict;
}
