import type { ProfileScope } from '../../notifier/notifier.js';

/**
 * One kind of data a phone may share with a profile, with the Conduit tool that reads it: a feature
 * declares these (`HostFeature.sharedData`), and the "Conduit first" line names those that are shared.
 */
export interface SharedData {
  /** How the line names the data (`health data`). */
  what: string;
  /** The Conduit tool that reads it (`conduit_health`). */
  tool: string;
  /** Whether the phone shares it with the profile at `home`. */
  shared: (home: string) => boolean;
}

/** The data the features share, in the order they are registered (and so named in the line). */
export function sharedDataOf(features: readonly { sharedData?: readonly SharedData[] }[]): readonly SharedData[] {
  return features.flatMap((feature) => feature.sharedData ?? []);
}

/** What is shared is looked up at most once a minute per profile (the seed, "Conduit first"). */
const LOOKUP_EVERY_MS = 60_000;

/**
 * The "Conduit first" line every turn of a main conversation gets through `pre_llm_call`: it names what
 * the phone shares with this profile and says to use the Conduit tool before other tools, skills or CLIs
 * for the same data. Null when the phone shares nothing (no line at all).
 */
export function conduitFirstLine(
  now: () => number,
  sharedData: readonly SharedData[],
): (profile: ProfileScope) => string | null {
  const cache = new Map<string, { at: number; line: string | null }>();
  return (profile) => {
    const cached = cache.get(profile.home);
    if (cached && now() - cached.at < LOOKUP_EVERY_MS) return cached.line;
    const shared = sharedData.filter((entry) => entry.shared(profile.home));
    const line =
      shared.length === 0
        ? null
        : `Conduit: the user's phone shares ${shared.map((entry) => entry.what).join(', ')} with this profile. ` +
          `For that data use the Conduit tool (${shared.map((entry) => entry.tool).join(', ')}) before other tools, skills or CLIs.`;
    cache.set(profile.home, { at: now(), line });
    return line;
  };
}
