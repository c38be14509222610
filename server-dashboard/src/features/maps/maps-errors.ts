import { MAPS_LIMITS } from './maps-limits.js';
import type { MapsTokenRefusal } from './maps-token-client.js';

/**
 * A lookup the tool answers with a sentence for the model instead of a result: bad input, a refusal
 * the seed names, or a failure on the way. The text never carries the query, a token or a credential.
 */
export class MapsRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MapsRefusal';
  }
}

/** Every refusal of the host Maps engine in one place, worded for the model (and so for the user). */
export const MAPS_REFUSALS = {
  notPaired: 'This Hermes profile is not paired with Conduit, so it has no Apple Maps access.',
  hostEngineOff:
    'The user keeps maps lookups on their iPhone ("Keep maps lookups on this iPhone" in Conduit), so this host does not look anything up at Apple Maps.',
  relayUnavailable: (untilMs: number) =>
    `The Conduit relay this profile is paired with has no Apple Maps access; this host asks it again after ${new Date(untilMs).toISOString()}.`,
  budgetSpent: `This host has used its ${MAPS_LIMITS.appleCallsPerDay} Apple Maps lookups for today (UTC); try again tomorrow.`,
  meUnavailable:
    'There is no recent location from the user\'s phone, so "me" cannot be used. Ask the user where they are, or use an address or a place.',
  mePlacesOnly:
    'The user shares their location as saved place names only ("places only"), so "me" cannot be used for maps lookups. Ask the user where they are, or use an address or a place.',
  savedPlace: (name: string) =>
    `"${name}" is one of the user's saved places; their coordinates stay on the phone, and this host cannot look them up. Use an address or a place instead.`,
  phoneUnavailable:
    'The user keeps maps lookups on their iPhone, and the iPhone cannot answer now: it answers only while location sharing is on in the background (not paused) in a Conduit that answers maps lookups.',
  phoneNoAnswer: "The user's iPhone did not answer the maps lookup in time; try again in a moment.",
  transitNeedsPhone:
    "Transit routes need the user's iPhone, and this host cannot ask it yet. Ask for automobile, walking or cycling, or tell the user to check transit in Apple Maps.",
  unknownPlaceId: (id: string) =>
    `place_id:${id} is not one this profile was given recently (ids are kept for a while after an answer); search or look the place up again.`,
  noPlaceFound: 'Apple Maps found no place for that address or name.',
  appleRefusedRequest: (detail: string | null) =>
    `Apple Maps could not use that request${detail ? `: ${detail}` : ''}.`,
  appleRefusedToken: 'Apple Maps refused the access token the relay handed out; try again in a few minutes.',
  appleRateLimited: 'Apple Maps is limiting requests right now; try again in a few minutes.',
  appleUnreachable: 'Apple Maps could not be reached or gave no usable answer; try again later.',
  stateUnreadable:
    "This host's Maps usage file could not be read; the operator should check the Conduit state directory.",
} as const;

/** What the relay's refusal of a token means for the model. */
export function tokenRefusalText(reason: MapsTokenRefusal): string {
  switch (reason) {
    case 'insecure_relay_url':
      return "This profile's relay address would send its credential unencrypted, so this host does not ask it for Apple Maps access.";
    case 'unauthorized':
      return "The Conduit relay no longer accepts this profile's pairing; pair again in Conduit.";
    case 'rate_limited':
      return 'The Conduit relay is limiting Maps access requests; try again in a minute.';
    case 'maps_token_limit':
      return "The Conduit relay has handed this user's hosts their Apple Maps access for today; try again tomorrow.";
    case 'maps_unreachable':
      return 'The Conduit relay could not reach Apple Maps; try again later.';
    case 'relay_unreachable':
      return 'The Conduit relay could not be reached; try again later.';
    case 'relay_error':
      return 'The Conduit relay gave no usable answer for Apple Maps access; try again later.';
  }
}
