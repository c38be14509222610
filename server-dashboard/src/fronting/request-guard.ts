import net from 'node:net';
import os from 'node:os';
import type { IncomingMessage } from 'node:http';
import { isLoopbackHost } from '../kernel/loopback.js';

/**
 * The browser boundary of the port this service listens on. Every request — our own routes, the hook
 * and MCP endpoints, and everything proxied to the Hermes dashboard — passes here first, before any
 * routing or proxying, so the decisions below are made on exactly the target the router will see.
 *
 * Why a Host check of our own: the proxy rewrites `Host` to the dashboard's address (so the dashboard's
 * own DNS-rebinding guard would always pass); a page whose name an attacker rebinds to this machine
 * would otherwise read the dashboard's session token from `/`. A rebinding page can only make the
 * browser send a *name* the attacker controls, never an IP literal or `localhost`, so those are known
 * by construction; any other name must be this machine's own or one the operator lists.
 */
export interface HostPolicy {
  /** Lowercase names this service is known by besides IP literals and localhost (`*.suffix` allowed). */
  names: readonly string[];
}

export type GuardVerdict = { ok: true } | { ok: false; status: 400 | 403; error: string; detail: string };

/** This machine's own names: a rebinding page cannot use them, as it does not control their DNS. */
export function machineNames(): string[] {
  const name = os.hostname().toLowerCase();
  return name ? [name, name.endsWith('.local') ? name : `${name}.local`] : [];
}

/** The policy from `CONDUIT_HOST_ALLOWED_HOSTS` (comma-separated names, `*.example.net` for a suffix). */
export function hostPolicy(configured: readonly string[]): HostPolicy {
  const names = [...machineNames(), ...configured.map((n) => n.trim().toLowerCase()).filter(Boolean)];
  return { names: [...new Set(names)] };
}

function nameAllowed(hostname: string, policy: HostPolicy): boolean {
  const bare = hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  if (net.isIP(bare) !== 0 || isLoopbackHost(bare)) return true;
  return policy.names.some((name) =>
    name.startsWith('*.') ? bare.endsWith(name.slice(1)) && bare.length > name.length - 1 : bare === name,
  );
}

/** `host[:port]` as a URL authority, or null when it is not one (userinfo, paths and junk refused). */
function parseAuthority(authority: string): URL | null {
  if (!authority || /[/?#@\s\\]/.test(authority)) return null;
  try {
    return new URL(`http://${authority}`);
  } catch {
    return null;
  }
}

const UNRESERVED_ESCAPE = /%([0-9A-Fa-f]{2})/g;

/**
 * Decodes percent-escapes of unreserved characters (RFC 3986 §6.2.2.2: `%5F` is `_`), which the router
 * would decode too, so the path we route and proxy on is the one the handler runs for. Other escapes
 * (`%2F`, `%20`, …) keep their meaning and stay as they are.
 */
function decodeUnreserved(pathname: string): string {
  return pathname.replace(UNRESERVED_ESCAPE, (escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(char) ? char : escape;
  });
}

/**
 * Brings the request target to the one canonical origin form the rest of the service sees: an
 * absolute-form target (`GET http://x/api/… HTTP/1.1`) becomes its path and query, and its authority
 * replaces `Host` as RFC 9112 §3.2.2 requires; escaped unreserved characters are decoded. Anything
 * else that is not an origin-form path (`OPTIONS *` aside) is refused.
 */
export function canonicaliseTarget(req: IncomingMessage): GuardVerdict {
  const raw = req.url ?? '/';
  if (raw === '*' && req.method === 'OPTIONS') return { ok: true };
  let target = raw;
  if (!raw.startsWith('/')) {
    let absolute: URL;
    try {
      absolute = new URL(raw);
    } catch {
      return refuse(400, 'bad_request_target', 'The request target must be a path');
    }
    if ((absolute.protocol !== 'http:' && absolute.protocol !== 'https:') || absolute.username || absolute.password) {
      return refuse(400, 'bad_request_target', 'The request target must be a path');
    }
    target = absolute.pathname + absolute.search;
    req.headers.host = absolute.host;
  }
  const query = target.indexOf('?');
  const pathname = query === -1 ? target : target.slice(0, query);
  req.url = decodeUnreserved(pathname) + (query === -1 ? '' : target.slice(query));
  return { ok: true };
}

function refuse(status: 400 | 403, error: string, detail: string): GuardVerdict {
  return { ok: false, status, error, detail };
}

/**
 * Refuses a request whose `Host` is not a name this service is known by, or that a browser sent from
 * a page of another origin. `Origin` is allowed when it is the request's own origin (same `Host`), a
 * loopback page (as the Hermes dashboard's own CORS rule), or a listed name; `Origin: null` (sandboxed
 * frames, `file:` pages) never is. Callers that are not browsers send no Origin and pass.
 */
export function checkBrowserBoundary(req: IncomingMessage, policy: HostPolicy): GuardVerdict {
  const hostHeader = req.headers.host;
  if (hostHeader !== undefined) {
    const host = parseAuthority(hostHeader);
    if (!host || !nameAllowed(host.hostname, policy)) {
      return refuse(
        403,
        'host_not_allowed',
        'This service is not known by that name; add it to CONDUIT_HOST_ALLOWED_HOSTS to allow it',
      );
    }
  }
  const origin = req.headers.origin;
  if (origin === undefined) return { ok: true };
  let originUrl: URL | null = null;
  try {
    originUrl = origin === 'null' ? null : new URL(origin);
  } catch {
    originUrl = null;
  }
  const sameOrigin =
    originUrl !== null && hostHeader !== undefined && originUrl.host.toLowerCase() === hostHeader.toLowerCase();
  if (
    originUrl === null ||
    (originUrl.protocol !== 'http:' && originUrl.protocol !== 'https:') ||
    !(sameOrigin || isLoopbackHost(originUrl.hostname) || namedOrigin(originUrl.hostname, policy))
  ) {
    return refuse(403, 'origin_not_allowed', 'Requests from pages of another origin are refused');
  }
  return { ok: true };
}

/** An origin allowed by name: listed by the operator or this machine's own (IP literals must be same-origin). */
function namedOrigin(hostname: string, policy: HostPolicy): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '');
  return net.isIP(bare) === 0 && nameAllowed(bare, policy);
}

/** The refusal as an HTTP/1.1 answer (both `error` and the dashboard's `detail`, so every client reads it). */
export function refusalBody(verdict: Extract<GuardVerdict, { ok: false }>): string {
  return JSON.stringify({ error: verdict.error, detail: verdict.detail });
}
