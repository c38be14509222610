/**
 * The host-side bounds of location, each with why it is that number (the wire's bounds, devices,
 * places, batch size and items, are the contract's LOCATION_LIMITS). None is configurable: they are
 * the seed's promises to the user, not tuning knobs.
 */
export const LOCATION_HOST_LIMITS = {
  /** The seed: at most one locate every 5 minutes per profile (the relay's push also expires after 5). */
  locateEveryS: 5 * 60,
  /** The seed: at most 30 locates a day per profile, counted over a rolling 24 hours. */
  locatesPerDay: 30,
  /**
   * How long locate waits for the fresh fix. A woken Location Push extension usually answers within a
   * few seconds; past 20 s the model's turn is better served by the latest fix and a note.
   */
  locateWaitMs: 20_000,
  /** A fix taken up to this long before the request still counts as fresh: the phone's clock may lag. */
  locateClockSkewS: 60,
  /** The latest fix shown beside a refused or unanswered locate: up to a day old, with its age. */
  locateLatestMaxAgeS: 24 * 3600,
  /**
   * One location push's relay request. The relay answers once APNs took the push; locate's own wait for
   * the fix comes after, so this bounds only the relay, as the notifier's relay timeout does.
   */
  relayTimeoutMs: 15_000,
  /** Area detail: coordinates to 2 decimals (about 1 km), so the accuracy claimed is never finer. */
  areaAccuracyM: 1000,
  /** Area detail: distances to 100 m, so distances to three places cannot pin a point inside the area. */
  areaDistanceStepM: 100,
  /** A history read without `hours` covers the last day: what "where have I been today" needs. */
  historyDefaultHours: 24,
  /** A history read without `limit` answers 100 fixes, newest first: enough for a day of visits and moves. */
  historyDefaultFixes: 100,
  /**
   * How old the last fix may be to stand for maps' "me": a day, as calls count a fix with background
   * sharing on (the seed), since background fixes come only on arrivals, departures and moves.
   */
  mapsMeMaxAgeS: 24 * 3600,
} as const;
