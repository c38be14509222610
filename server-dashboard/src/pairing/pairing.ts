import { isPaired, relayUrlOf, DEFAULT_RELAY_URL, type CredentialFile } from '../credentials/credential-file.js';
import { readCredentials, unchanged, updateCredentials } from '../credentials/credential-store.js';
import { normalisePairingCode } from './pairing-code.js';
import { announcePlugin, type AnnounceOptions } from './plugin-hello.js';
import type { ClaimAnswer, RelayApi } from './relay-api.js';
import { isLoopbackHost } from '../kernel/loopback.js';
import { credentialRelayUrl, parseBareRelayUrl, relayUrlText, RelayUrlError } from './relay-url.js';

/** Input the user got wrong (a malformed code or URL): a 400, or exit 1 with the message. */
export class PairingInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PairingInputError';
  }
}

export interface PairRequest {
  home: string;
  pairingCode: string;
  /** The relay to claim at; absent uses `fallbackRelayUrl`. */
  relayUrl?: string;
  /** The relay used when none is given (the CLI: the public relay; the route: the profile's current relay). */
  fallbackRelayUrl?: string;
  gatewayName: string;
  relay: RelayApi;
}

export interface PairResult {
  installation_id: string;
  gateway_id: string;
  gateway_name: string;
  relay_url: string;
  /** The E2E key survived the re-pair (same phone and gateway). */
  keptE2e: boolean;
}

/** Printable, single-line, at most 80 characters (the relay keeps 80). */
export function cleanGatewayName(name: string, hostname: string): string {
  const printable = Array.from(name, (char) => ((char.codePointAt(0) ?? 0) < 0x20 || char === '\u007f' ? ' ' : char));
  const cleaned = printable.join('').trim().slice(0, 80);
  return cleaned || `${hostname} Hermes`.slice(0, 80);
}

/**
 * Claims a pairing code at the relay and stores the credential in the profile's conduit-push.json.
 * The claim carries only the code and the gateway name, never follows a redirect, and nothing is
 * written unless the relay's answer is usable.
 */
export async function pairProfile(request: PairRequest): Promise<PairResult> {
  const code = normalisePairingCode(request.pairingCode);
  if (!code) throw new PairingInputError('That is not a Conduit pairing code (expected XXXXX-XXXXX)');
  const claimUrl = parseBareRelayUrl(request.relayUrl ?? request.fallbackRelayUrl ?? DEFAULT_RELAY_URL);
  if (!claimUrl) throw new PairingInputError('The relay URL must be a bare http(s) URL such as https://push.milim.dev');
  // Fail before the network if the file is corrupt: we would not be allowed to overwrite it anyway.
  await readCredentials(request.home);

  const answer = await request.relay.claimPairing(relayUrlText(claimUrl), {
    pairing_code: code,
    gateway_name: request.gatewayName,
  });
  const relayUrl = savedRelayUrl(claimUrl, answer);
  credentialRelayUrl(relayUrl); // the saved address must be one credentials may go to

  return updateCredentials(request.home, (current) => {
    const next: CredentialFile = {
      credential: answer.credential,
      gateway_id: answer.gateway_id,
      gateway_name: request.gatewayName,
      installation_id: answer.installation_id,
      relay_url: relayUrl,
    };
    if (current?.redact_content !== undefined) next.redact_content = current.redact_content;
    if (current?.redact_key !== undefined) next.redact_key = current.redact_key;
    const samePairing =
      current !== null &&
      current.installation_id === answer.installation_id &&
      current.gateway_id === answer.gateway_id;
    const keptE2e = samePairing && current.e2e !== undefined && current.e2e !== null;
    if (keptE2e) next.e2e = current.e2e;
    return {
      next,
      result: {
        installation_id: answer.installation_id,
        gateway_id: answer.gateway_id,
        gateway_name: request.gatewayName,
        relay_url: relayUrl,
        keptE2e,
      },
    };
  });
}

/**
 * `conduit push pair`: the claim, then `plugin.hello` so the phone sees this host's version at once. A
 * failed announcement is answered, not thrown: the pairing stands.
 */
export async function pairAndAnnounce(
  request: PairRequest & { profile: string },
  announce: AnnounceOptions,
): Promise<{ gatewayName: string; announceError: string | null }> {
  const result = await pairProfile(request);
  try {
    await announcePlugin(request.home, request.profile, announce);
    return { gatewayName: result.gateway_name, announceError: null };
  } catch (error) {
    return { gatewayName: result.gateway_name, announceError: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * Which relay address to keep after a claim:
 * - claimed over HTTPS: the relay's own answer when it is HTTPS (its PUBLIC_URL), else the address used;
 * - claimed over plain HTTP on this machine: the address used (a loopback relay the user chose);
 * - claimed over plain HTTP elsewhere (LAN, Tailscale): the relay's HTTPS PUBLIC_URL, which is required.
 */
function savedRelayUrl(claimUrl: URL, answer: ClaimAnswer): string {
  const answered = answer.relay_url ? parseBareRelayUrl(answer.relay_url) : null;
  const answeredHttps = answered?.protocol === 'https:' ? relayUrlText(answered) : null;
  if (claimUrl.protocol === 'https:') return answeredHttps ?? relayUrlText(claimUrl);
  if (isLoopbackHost(claimUrl.hostname)) return relayUrlText(claimUrl);
  if (answeredHttps) return answeredHttps;
  throw new RelayUrlError(
    `The relay at ${claimUrl.origin} did not name an HTTPS address (its PUBLIC_URL), so this host cannot use it; pair over HTTPS`,
  );
}

export type UnpairResult = 'revoked' | 'not-paired';

/**
 * Revokes this gateway at the relay (DELETE /v1/gateways/current), then deletes the file. When the relay
 * refuses or cannot be reached, the file stays (so the user can retry) — except for 401, which means the
 * relay no longer knows this credential, so there is nothing left to revoke.
 */
export async function unpairProfile(home: string, relay: RelayApi): Promise<UnpairResult> {
  const current = await readCredentials(home);
  if (!isPaired(current)) {
    await updateCredentials(home, (file) => ({ next: isPaired(file) ? unchanged : null, result: undefined }));
    return 'not-paired';
  }
  const relayUrl = relayUrlText(credentialRelayUrl(relayUrlOf(current)));
  try {
    await relay.revokeGateway(relayUrl, current.credential);
  } catch (error) {
    if (!(typeof error === 'object' && error !== null && 'status' in error && error.status === 401)) throw error;
  }
  // Delete only the pairing we revoked: a re-pair that landed meanwhile stays.
  await updateCredentials(home, (file) => ({
    next: isPaired(file) && file.credential !== current.credential ? unchanged : null,
    result: undefined,
  }));
  return 'revoked';
}

/** Turns redaction on (minting the redact key if absent) or off (keeping the key). False when not paired. */
export async function setRedaction(home: string, on: boolean, randomHex: () => string): Promise<boolean> {
  return updateCredentials(home, (current) => {
    if (!isPaired(current)) return { next: unchanged, result: false };
    const next: CredentialFile = { ...current, redact_content: on };
    if (on && !(typeof current.redact_key === 'string' && /^[0-9a-f]{64}$/.test(current.redact_key))) {
      next.redact_key = randomHex();
    }
    return { next, result: true };
  });
}
