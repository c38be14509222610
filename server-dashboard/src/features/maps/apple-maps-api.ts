import { z } from 'zod';
import type { Timers } from '../../kernel/timers.js';
import { mayCarryCredentials } from '../../kernel/loopback.js';
import { parseJsonText, upstreamExchange } from '../../kernel/upstream-http.js';
import type { MapsDailyBudget } from './daily-budget.js';
import { MAPS_REFUSALS, MapsRefusal, tokenRefusalText } from './maps-errors.js';
import { MAPS_LIMITS } from './maps-limits.js';
import type { MapsRelayTarget, RelayMapsTokens } from './maps-token-client.js';

/** Apple Maps Server API's public origin (https://developer.apple.com/documentation/applemapsserverapi). */
export const APPLE_MAPS_ORIGIN = 'https://maps-api.apple.com';

// The documented shapes (Place, SearchResponse, PlaceResults, DirectionsResponse, EtaResponse,
// ErrorResponse), loose so a field Apple adds later never fails a lookup, strict on what is used.

const latitude = z.number().min(-90).max(90);
const longitude = z.number().min(-180).max(180);
const appleLocation = z.object({ latitude, longitude });
export type AppleLocation = z.infer<typeof appleLocation>;

const mapRegion = z.object({
  northLatitude: latitude,
  eastLongitude: longitude,
  southLatitude: latitude,
  westLongitude: longitude,
});
export type AppleMapRegion = z.infer<typeof mapRegion>;

const structuredAddress = z.looseObject({
  administrativeArea: z.string().optional(),
  administrativeAreaCode: z.string().optional(),
  subAdministrativeArea: z.string().optional(),
  locality: z.string().optional(),
  subLocality: z.string().optional(),
  postCode: z.string().optional(),
  thoroughfare: z.string().optional(),
  subThoroughfare: z.string().optional(),
  fullThoroughfare: z.string().optional(),
  areasOfInterest: z.array(z.string()).optional(),
  dependentLocalities: z.array(z.string()).optional(),
});

/**
 * A Place. Apple documents `coordinate`; its directions example names the same field `center`, so
 * either is accepted and read as `coordinate`.
 */
const applePlace = z
  .looseObject({
    id: z.string().optional(),
    name: z.string().optional(),
    coordinate: appleLocation.optional(),
    center: appleLocation.optional(),
    displayMapRegion: mapRegion.optional(),
    formattedAddressLines: z.array(z.string()).optional(),
    structuredAddress: structuredAddress.optional(),
    country: z.string().optional(),
    countryCode: z.string().optional(),
    poiCategory: z.string().optional(),
    telephone: z.string().optional(),
    urls: z.array(z.string()).optional(),
  })
  .transform((place, context) => {
    const coordinate = place.coordinate ?? place.center;
    if (!coordinate) {
      context.addIssue({ code: 'custom', message: 'a place without a coordinate' });
      return z.NEVER;
    }
    return { ...place, coordinate };
  });
export type ApplePlace = z.output<typeof applePlace>;

export const searchResponse = z.looseObject({
  displayMapRegion: mapRegion.optional(),
  results: z.array(applePlace).default([]),
});
export const placeResults = z.looseObject({ results: z.array(applePlace).default([]) });

export const directionsResponse = z.looseObject({
  origin: applePlace.optional(),
  destination: applePlace.optional(),
  routes: z
    .array(
      z.looseObject({
        name: z.string().optional(),
        distanceMeters: z.number().nonnegative(),
        durationSeconds: z.number().nonnegative(),
        transportType: z.string().optional(),
        stepIndexes: z.array(z.number().int().nonnegative()).default([]),
        hasTolls: z.boolean().optional(),
      }),
    )
    .default([]),
  steps: z
    .array(
      z.looseObject({
        stepPathIndex: z.number().int().optional(),
        distanceMeters: z.number().nonnegative().optional(),
        durationSeconds: z.number().nonnegative().optional(),
        instructions: z.string().optional(),
        transportType: z.string().optional(),
      }),
    )
    .default([]),
});
export type AppleDirections = z.output<typeof directionsResponse>;

export const etaResponse = z.looseObject({
  etas: z
    .array(
      z.looseObject({
        destination: appleLocation,
        transportType: z.string().optional(),
        distanceMeters: z.number().nonnegative(),
        expectedTravelTimeSeconds: z.number().nonnegative(),
        staticTravelTimeSeconds: z.number().nonnegative().optional(),
      }),
    )
    .default([]),
});

const errorResponse = z.looseObject({
  error: z.looseObject({ message: z.string().optional(), details: z.array(z.string()).optional() }),
});

/** Apple's message for a 400, printable and short; it describes the request, never a token. */
function appleMessage(text: string): string | null {
  const parsed = errorResponse.safeParse(parseJsonText(text));
  const message = parsed.success ? parsed.data.error.message : undefined;
  return message ? message.replace(/[^\x20-\x7e]/g, '').slice(0, 200) : null;
}

/**
 * One Apple Maps Server API call made for a profile: counted against the host's daily budget first,
 * authorised with the relay's token, retried once with a fresh token when Apple refuses it (a token
 * the relay renewed early, or one revoked), and read through its documented shape. Throws MapsRefusal.
 */
export class AppleMapsApi {
  constructor(
    private readonly options: {
      origin: string;
      tokens: RelayMapsTokens;
      budget: MapsDailyBudget;
      timers: Timers;
    },
  ) {}

  async get<Shape extends z.ZodType>(
    target: MapsRelayTarget,
    path: string,
    params: Record<string, string | undefined>,
    shape: Shape,
  ): Promise<z.output<Shape>> {
    const origin = this.options.origin.replace(/\/+$/, '');
    // The access token is a credential: never in clear beyond this machine.
    if (!safeOrigin(origin)) throw new MapsRefusal(MAPS_REFUSALS.appleUnreachable);
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, value);
    const url = `${origin}${path}?${query.toString()}`;
    for (let attempt = 0; ; attempt++) {
      await this.refuseWhenSpent();
      const answer = await this.options.tokens.token(target);
      if (answer.kind === 'unavailable') throw new MapsRefusal(MAPS_REFUSALS.relayUnavailable(answer.untilMs));
      if (answer.kind === 'refused') throw new MapsRefusal(tokenRefusalText(answer.reason));
      await this.takeBudget();
      let status: number;
      let text: string;
      try {
        ({ status, text } = await upstreamExchange(
          url,
          {
            method: 'GET',
            headers: { authorization: `Bearer ${answer.accessToken}` },
            timeoutMs: MAPS_LIMITS.requestTimeoutMs,
          },
          this.options.timers,
        ));
      } catch {
        throw new MapsRefusal(MAPS_REFUSALS.appleUnreachable);
      }
      if (status === 401) {
        this.options.tokens.forget(target.relayUrl, answer.accessToken);
        if (attempt === 0) continue;
        throw new MapsRefusal(MAPS_REFUSALS.appleRefusedToken);
      }
      if (status === 400) throw new MapsRefusal(MAPS_REFUSALS.appleRefusedRequest(appleMessage(text)));
      if (status === 429) throw new MapsRefusal(MAPS_REFUSALS.appleRateLimited);
      if (status !== 200) throw new MapsRefusal(MAPS_REFUSALS.appleUnreachable);
      const parsed = shape.safeParse(parseJsonText(text));
      if (!parsed.success) throw new MapsRefusal(MAPS_REFUSALS.appleUnreachable);
      return parsed.data;
    }
  }

  private async refuseWhenSpent(): Promise<void> {
    let spent: boolean;
    try {
      spent = await this.options.budget.spent();
    } catch {
      throw new MapsRefusal(MAPS_REFUSALS.stateUnreadable);
    }
    if (spent) throw new MapsRefusal(MAPS_REFUSALS.budgetSpent);
  }

  /** Counted just before the call, so a lookup refused on the way (no token) costs nothing. */
  private async takeBudget(): Promise<void> {
    let taken: boolean;
    try {
      taken = await this.options.budget.take();
    } catch {
      throw new MapsRefusal(MAPS_REFUSALS.stateUnreadable);
    }
    if (!taken) throw new MapsRefusal(MAPS_REFUSALS.budgetSpent);
  }
}

function safeOrigin(origin: string): boolean {
  try {
    return mayCarryCredentials(new URL(origin));
  } catch {
    return false;
  }
}
