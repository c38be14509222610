/**
 * Capability names the Watch features add to `GET /v1/meta` (the relay core merges them into its
 * list). Clients switch features on by these names, so they are wire constants.
 */
export const WATCH_CAPABILITIES = ['watch-tools-v1', 'watch-audio-v1', 'live-activities-v1', 'maps-token-v1'] as const;
