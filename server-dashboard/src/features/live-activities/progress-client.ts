import { createRelayClient } from '@conduit/sdk/relay';
import { isPaired, relayUrlOf } from '../../credentials/credential-file.js';
import { readCredentials } from '../../credentials/credential-store.js';
import { isCredentialSafeRelayUrl } from '../../kernel/loopback.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import type { ProgressAnswer, ProgressReport, ProgressTarget } from './reporter.js';

/** The profile's pairing as a report target, read at send time; null when it is not paired. */
export async function progressTarget(profile: ProfileScope): Promise<ProgressTarget | null> {
  const file = await readCredentials(profile.home);
  if (!isPaired(file)) return null;
  // Live Activity payloads cannot be sealed (iOS renders them); redact leaves the tool category out.
  return {
    relayUrl: relayUrlOf(file).replace(/\/+$/, ''),
    credential: file.credential,
    redact: file.redact_content === true,
  };
}

/**
 * POST /v1/live-activities/progress through the generated relay client, with the delivery path's
 * rules: the credential only over HTTPS or to this machine, no redirects, a timeout.
 */
export function progressPoster(options: { userAgent: string; timeoutMs: number; fetch?: typeof fetch }) {
  const doFetch = options.fetch ?? fetch;
  return async (target: ProgressTarget, report: ProgressReport): Promise<ProgressAnswer> => {
    if (!isCredentialSafeRelayUrl(target.relayUrl)) return 'error';
    const client = createRelayClient({
      baseUrl: target.relayUrl,
      fetch: (request: Request) =>
        doFetch(request, { redirect: 'manual', signal: AbortSignal.timeout(options.timeoutMs) }),
    });
    try {
      const { data, response } = await client.POST('/v1/live-activities/progress', {
        body: report,
        headers: { authorization: `Bearer ${target.credential}`, 'user-agent': options.userAgent },
      });
      // A relay before Live Activities has no such route (404, or 405 behind some proxies).
      if (response.status === 404 || response.status === 405) return 'absent';
      if (response.status !== 200 || !data) return 'error';
      return data.watching ? 'watching' : 'unwatched';
    } catch {
      return 'error';
    }
  };
}
