/**
 * The host Maps engine's bounds (the seed, conduit_maps), each with why it is that number. None is
 * configurable: they are promises the seed makes to the user and to Apple, not tuning knobs.
 */
export const MAPS_LIMITS = {
  /**
   * Apple Maps Server API calls per host per UTC day. The relay's one Maps key serves every host, and
   * Apple's quota is the key's, so one busy host must not spend everyone's day (the seed: 200).
   */
  appleCallsPerDay: 200,
  /** /v1/etas answers at most 10 destinations per call (Apple's bound, and the seed's). */
  travelTimeDestinations: 10,
  /**
   * How long the host stops asking a relay that answered 404 (no Maps key): the seed's hour, so a
   * relay that gains a key is noticed the same day without every lookup knocking on it.
   */
  relayUnavailableMs: 60 * 60_000,
  /**
   * A relay token is used until this long before it expires, so a lookup never starts with a token that
   * lapses on the way to Apple. Shorter than the relay's own minute (it renews before handing out).
   */
  tokenRenewBeforeMs: 30_000,
  /** One relay exchange or Apple call; a tool call may make three (token, geocode, route). */
  requestTimeoutMs: 10_000,
  /** The largest relay answer read (a token is a few hundred bytes). */
  relayAnswerMaxBytes: 16 * 1024,
  /**
   * Places remembered per profile for place_id:<id> (in memory only): enough for a conversation's
   * worth of searches, small enough that a long-running host never grows with them.
   */
  placesPerProfile: 200,
  /** Profiles whose places are remembered at once (the oldest profile's places go first). */
  profilesRemembered: 64,
  /** Routes answered per directions call (Apple may offer more alternates; the model needs a few). */
  routesPerAnswer: 3,
  /** Steps answered per route: enough to describe a trip, not a turn list for a cross-country drive. */
  stepsPerRoute: 40,
  /** Results answered per search or lookup. */
  resultsPerAnswer: 10,
  /** The longest query or place text passed on to Apple. */
  queryMaxChars: 300,
  /**
   * How long a tool call waits for the phone's answer. A woken Location Push extension fetches, asks
   * MapKit and answers within seconds; 25 s leaves the model's turn time for the guess or the host.
   */
  phoneWaitMs: 25_000,
  /** The seed's budgets: phone wakes per profile in any hour and in any day (rolling), persisted. */
  phoneWakesPerHour: 30,
  phoneWakesPerDay: 120,
  /** The seed: the same lookup again within 2 minutes is answered from the last answer, waking nothing. */
  repeatWithinMs: 2 * 60_000,
  /**
   * Lookups waiting for a phone per profile: a model asks one at a time; a few at once (parallel tool
   * calls) are fine, a flood is refused before it wakes anything.
   */
  pendingLookupsPerProfile: 8,
  /** Answers (accepted and refused) per profile a minute: a bad phone cannot keep the host opening seals. */
  phoneAnswersPerMinute: 60,
  /**
   * The straight-line guess's speeds (m/s) and detour factor: rough city averages, enough to say "about
   * 20 minutes" and labelled as a guess.
   */
  guessSpeedsMps: { automobile: 11, walking: 1.4, transit: 6, cycling: 4.2 },
  guessDetourFactor: 1.3,
} as const;
