import type { FastifyInstance } from 'fastify';
import { postE2e, getE2e } from '@conduit/contracts/dashboard/e2e';
import { postPair } from '@conduit/contracts/dashboard/pair';
import { bindRoute } from '@conduit/contracts/server';
import { relayUrlOf, type CredentialFile } from '../credentials/credential-file.js';
import { CorruptCredentialsError, readCredentials } from '../credentials/credential-store.js';
import { LockTimeoutError } from '../credentials/file-lock.js';
import { e2eStatus, provisionE2eKey } from './e2e-provisioning.js';
import { cleanGatewayName, pairProfile, PairingInputError } from './pairing.js';
import { announcePlugin, type PluginIdentity } from './plugin-hello.js';
import { RelayRejected, RelayUnreachable, type RelayApi } from './relay-api.js';
import { RelayUrlError } from './relay-url.js';
import { limiterKey, SlidingWindowLimit } from '../kernel/rate-window.js';
import { answerWithDetail, DetailError, readJsonBody } from '../kernel/detail-errors.js';

/**
 * POST /pair and GET/POST /e2e of /api/plugins/conduit_push (ROUTES.md, seed "Pairing from Conduit").
 * Errors answer FastAPI's `{"detail": "..."}` like the Hermes dashboard the Conduit app talks to.
 * Authentication of the caller is the app's (host-core's) job and runs before these handlers.
 */
export interface PairingRouteDeps {
  /**
   * The home directory of `?profile=` (absent = the served profile). Throw a ProfileUnavailable (or any
   * error with a numeric `status`) when it cannot be resolved; these routes never fall back to another
   * profile.
   */
  resolveProfileHome: (profile: string | undefined) => Promise<ProfileHome> | ProfileHome;
  relay: RelayApi;
  clock: () => number;
  hostname: () => string;
  identity: PluginIdentity;
  randomBytes?: (length: number) => Uint8Array;
}

export interface ProfileHome {
  home: string;
  /** The profile's name as Hermes knows it (`default` for the root home). */
  profile: string;
}

/** A profile that cannot be served (unknown, or this host cannot resolve it): 503 unless stated. */
export class ProfileUnavailable extends Error {
  constructor(
    message: string,
    readonly status = 503,
  ) {
    super(message);
    this.name = 'ProfileUnavailable';
  }
}

const BODY_LIMIT_BYTES = 4096;
const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

function asObject(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

export function registerPairingRoutes(app: FastifyInstance, deps: PairingRouteDeps): void {
  const pairLimit = new SlidingWindowLimit(10, 60_000, deps.clock);
  const keyLimit = new SlidingWindowLimit(10, 60_000, deps.clock);

  async function homeOf(profile: string | undefined): Promise<ProfileHome> {
    try {
      return await deps.resolveProfileHome(profile);
    } catch (error) {
      const status = typeof error === 'object' && error !== null && 'status' in error ? Number(error.status) : 503;
      // host-core's resolver throws WireError(503, 'profile_unavailable', { detail }); prefer its detail text.
      const extra = typeof error === 'object' && error !== null && 'extra' in error ? error.extra : undefined;
      const detail =
        typeof extra === 'object' && extra !== null && 'detail' in extra && typeof extra.detail === 'string'
          ? extra.detail
          : error instanceof Error
            ? error.message
            : "This Hermes profile can't be resolved";
      throw new DetailError(status >= 400 && status < 600 ? status : 503, detail);
    }
  }

  void app.register(async (scope) => {
    // Our own body reading (any content type, 4 KiB at most, parsed in the handler) and the
    // dashboard's `{"detail"}` errors, with the two failures only these routes meet.
    answerWithDetail(scope, {
      bodyLimitBytes: BODY_LIMIT_BYTES,
      known: (error) => {
        if (error instanceof CorruptCredentialsError) {
          return new DetailError(409, "This profile's conduit-push.json is unreadable; fix or move it away");
        }
        if (error instanceof LockTimeoutError) {
          return new DetailError(503, 'Another conduit process is writing this profile; try again');
        }
        return undefined;
      },
      failure: (request, type) =>
        `Conduit ${request.url.includes('/e2e') ? 'e2e' : 'pair'} failed on the host (${type})`,
    });

    bindRoute(scope, postPair, async ({ query, body: raw }) => {
      if (!pairLimit.tryTake(limiterKey(query.profile))) {
        return { status: 429, body: { detail: 'Too many pairing requests; try again shortly' }, headers: NO_STORE };
      }
      const body = asObject(readJsonBody(raw));
      const { home, profile } = await homeOf(query.profile);
      const code = typeof body.pairing_code === 'string' ? body.pairing_code : '';
      if (body.relay_url !== undefined && body.relay_url !== null && typeof body.relay_url !== 'string') {
        return { status: 400, body: { detail: 'relay_url must be a bare http(s) URL' }, headers: NO_STORE };
      }
      const current: CredentialFile | null = await readCredentials(home);
      try {
        const result = await pairProfile({
          home,
          pairingCode: code,
          ...(typeof body.relay_url === 'string' && body.relay_url.trim() ? { relayUrl: body.relay_url } : {}),
          ...(current ? { fallbackRelayUrl: relayUrlOf(current) } : {}),
          gatewayName: cleanGatewayName('', deps.hostname()),
          relay: deps.relay,
        });
        await announce(home, profile);
        return {
          status: 200,
          body: {
            ok: true,
            paired: true,
            installation_id: result.installation_id,
            gateway_id: result.gateway_id,
            gateway_name: result.gateway_name,
            relay_url: result.relay_url,
          },
          headers: NO_STORE,
        };
      } catch (error) {
        if (error instanceof PairingInputError)
          return { status: 400, body: { detail: error.message }, headers: NO_STORE };
        if (error instanceof RelayRejected) {
          if (error.status === 404 || error.status === 410) {
            return {
              status: 410,
              body: { detail: 'That pairing code expired or was already used' },
              headers: NO_STORE,
            };
          }
          if (error.status === 429) {
            return {
              status: 429,
              body: { detail: `The Conduit relay refused the pairing for now (${error.code})` },
              headers: NO_STORE,
            };
          }
          return { status: 502, body: { detail: error.message }, headers: NO_STORE };
        }
        if (error instanceof RelayUrlError) return { status: 502, body: { detail: error.message }, headers: NO_STORE };
        if (error instanceof RelayUnreachable) {
          return { status: 502, body: { detail: "Couldn't reach the Conduit relay" }, headers: NO_STORE };
        }
        throw error;
      }
    });

    bindRoute(scope, getE2e, async ({ query }) => {
      const { home } = await homeOf(query.profile);
      return { status: 200, body: await e2eStatus(home), headers: NO_STORE };
    });

    bindRoute(scope, postE2e, async ({ query, body: raw }) => {
      if (!keyLimit.tryTake(limiterKey(query.profile))) {
        return {
          status: 429,
          body: { detail: 'Too many encryption key requests; try again shortly' },
          headers: NO_STORE,
        };
      }
      const body = readJsonBody(raw);
      const { home } = await homeOf(query.profile);
      const outcome = await provisionE2eKey(home, body, deps.clock());
      if (!outcome.ok) return { status: outcome.status, body: { detail: outcome.detail }, headers: NO_STORE };
      return { status: 200, body: { ok: true, kid: outcome.kid }, headers: NO_STORE };
    });
  });

  /** Best effort, as the CLI: the phone sees this host's version at once; a failure does not undo the pairing. */
  async function announce(home: string, profile: string): Promise<void> {
    // Announcing is an optimisation; the next event carries the version too.
    await announcePlugin(home, profile, {
      identity: deps.identity,
      relay: deps.relay,
      clock: deps.clock,
      ...(deps.randomBytes ? { randomBytes: deps.randomBytes } : {}),
    }).catch(() => undefined);
  }
}
