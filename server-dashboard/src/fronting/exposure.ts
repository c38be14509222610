import { isLoopbackHost } from '../kernel/loopback.js';
import type { HostConfig } from '../config.js';

/** The marker a Hermes dashboard without a login of its own writes into `/` (SURFACES.md, loopback mode). */
const OPEN_DASHBOARD_MARKER = '__HERMES_SESSION_TOKEN__';

/**
 * Whether this service may listen where it is configured to. In front of a Hermes dashboard that runs
 * without a login of its own (its loopback mode hands the session token to whoever loads `/`), a
 * non-loopback address would give that token — and the dashboard, terminal included — to anyone who
 * reaches the port. So that combination is refused unless the operator opts in, and so is one where
 * the dashboard cannot be asked (we cannot tell, so we do not assume). Returns the refusal, or null.
 */
export async function exposureRefusal(
  config: Pick<HostConfig, 'host' | 'fronting' | 'allowOpenDashboard'>,
  options: { fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<string | null> {
  if (config.fronting.mode !== 'dashboard' || isLoopbackHost(config.host) || config.allowOpenDashboard) return null;
  const doFetch = options.fetch ?? fetch;
  const listen = `CONDUIT_HOST_BIND=${config.host}`;
  let page: string;
  try {
    const response = await doFetch(new URL('/', config.fronting.dashboardUrl), {
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs ?? 5_000),
    });
    page = response.status >= 200 && response.status < 300 ? await response.text() : '';
    if (!(response.status >= 200 && response.status < 300)) await response.body?.cancel();
  } catch {
    return (
      `${listen}: the Hermes dashboard at HERMES_DASHBOARD_URL could not be reached to check that it has a login ` +
      'of its own. Start it first, bind this service to 127.0.0.1, or set CONDUIT_HOST_ALLOW_OPEN_DASHBOARD=1.'
    );
  }
  if (!page.includes(OPEN_DASHBOARD_MARKER)) return null;
  return (
    `${listen}: the Hermes dashboard at HERMES_DASHBOARD_URL runs without a login of its own, so listening on a ` +
    'non-loopback address would hand its session token to anyone who reaches this port. Bind this service to ' +
    '127.0.0.1, give the dashboard a login (a non-loopback bind or public_url with an auth provider), or set ' +
    'CONDUIT_HOST_ALLOW_OPEN_DASHBOARD=1 to accept the risk.'
  );
}
