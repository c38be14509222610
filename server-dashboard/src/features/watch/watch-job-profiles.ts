import { hermesApiClient } from '@conduit/contracts/hermes/api-client';
import type { HermesRunsPort } from '../../kernel/feature.js';
import { profileForRoute, readProfileFiles } from '../../kernel/profile-files.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { WATCH_LIMITS } from './watch-limits.js';

/** The Hermes runs methods jobs use: the kernel's one API client. */
export type JobRunsApi = HermesRunsPort['api'];

/** A configured address that already names one profile (`…/p/<name>`) reaches no other. */
function namesProfile(url: string): boolean {
  try {
    return /\/p\/[^/]+\/*$/.test(new URL(url).pathname);
  } catch {
    return true;
  }
}

/**
 * Which Hermes API server reaches a profile's runs: the configured one for the profile it serves, and
 * for another profile the same server under `/p/<profile>` with that profile's own `API_SERVER_KEY`
 * from its `.env` (SURFACES.md §1, multi-profile), through the same client. A profile without a key of
 * its own is not reached at all: another profile's key is never borrowed.
 */
export class JobRunsDirectory {
  /** Clients made for other profiles, by profile and key (an edited key makes a new one). */
  private readonly clients = new Map<string, { key: string; api: JobRunsApi }>();

  constructor(
    private readonly port: HermesRunsPort,
    private readonly hermesHome: string,
  ) {}

  /** The profile's scope when it exists on this host, else null. */
  profile(name: string): ProfileScope | null {
    try {
      return profileForRoute(this.hermesHome, name);
    } catch {
      return null;
    }
  }

  async runsFor(profile: ProfileScope): Promise<JobRunsApi | null> {
    if (profile.name === this.port.apiProfile) return this.port.api;
    const url = this.port.url;
    if (url === null || namesProfile(url)) return null;
    const key = (await readProfileFiles(profile, {})).env('API_SERVER_KEY');
    if (key === undefined) return null;
    const known = this.clients.get(profile.name);
    if (known?.key === key) return known.api;
    const api = hermesApiClient({
      url: `${url.replace(/\/+$/, '')}/p/${encodeURIComponent(profile.name)}`,
      key,
      timeoutMs: WATCH_LIMITS.relayTimeoutMs,
    });
    this.clients.set(profile.name, { key, api });
    return api;
  }
}
