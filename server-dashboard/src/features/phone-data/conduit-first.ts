import type { ProfileScope } from '../../notifier/notifier.js';
import { healthShared } from '../health/health-tool.js';
import { locationShared } from '../location/index.js';
import { calendarShared, phoneStatusShared } from '../phone/index.js';

/** What a phone shares with a profile, each with the Conduit tool that reads it. */
const SHARED_DATA: readonly { what: string; tool: string; shared: (home: string) => boolean }[] = [
  { what: 'health data', tool: 'conduit_health', shared: healthShared },
  { what: 'location', tool: 'conduit_location', shared: locationShared },
  { what: 'calendars and reminders', tool: 'conduit_calendar', shared: calendarShared },
  { what: 'phone status and Focus', tool: 'conduit_phone', shared: phoneStatusShared },
];

/** What is shared is looked up at most once a minute per profile (the seed, "Conduit first"). */
const LOOKUP_EVERY_MS = 60_000;

/**
 * The "Conduit first" line every turn of a main conversation gets through `pre_llm_call`: it names what
 * the phone shares with this profile and says to use the Conduit tool before other tools, skills or CLIs
 * for the same data. Null when the phone shares nothing (no line at all).
 */
export function conduitFirstLine(now: () => number): (profile: ProfileScope) => string | null {
  const cache = new Map<string, { at: number; line: string | null }>();
  return (profile) => {
    const cached = cache.get(profile.home);
    if (cached && now() - cached.at < LOOKUP_EVERY_MS) return cached.line;
    const shared = SHARED_DATA.filter((entry) => entry.shared(profile.home));
    const line =
      shared.length === 0
        ? null
        : `Conduit: the user's phone shares ${shared.map((entry) => entry.what).join(', ')} with this profile. ` +
          `For that data use the Conduit tool (${shared.map((entry) => entry.tool).join(', ')}) before other tools, skills or CLIs.`;
    cache.set(profile.home, { at: now(), line });
    return line;
  };
}
