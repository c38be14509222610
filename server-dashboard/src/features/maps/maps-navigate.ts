import { PRESENT_LIMITS, presentMaps } from '@conduit/contracts/dashboard/present';
import type { ProfileScope } from '../../notifier/notifier.js';
import { MAPS_REFUSALS } from './maps-errors.js';
import type { MapsNavigator, NavigatePrompt } from './maps-ports.js';
import type { NavigateRequest, TravelMode } from './maps-request.js';
import type { PlaceCache } from './place-cache.js';
import { latLon, savedPlaceNamed, type PlaceInput } from './place-input.js';

/** navigate's prompt, each value with why it is that. */
export const NAVIGATE_PROMPT = {
  /**
   * The seed's default prompt life: directions are asked for a trip about to start; half an hour later
   * the user has left another way or changed their mind, and a Go button would open a stale trip.
   */
  ttlMinutes: 30,
  /** The seed: a Go button, answered by tap or by saying "go" in a call. */
  actionLabel: 'Go',
  spokenYes: ['go'],
} as const;

/** The longest destination a prompt carries (the contract's bound on `maps.to`). */
const DESTINATION_MAX_CHARS = presentMaps.shape.to.maxLength ?? 500;

/**
 * Apple Maps' `dirflg` per mode (Apple's Map Links reference: d by car, w by foot, r by public
 * transit). It documents no cycling value, so a cycling link leaves it out and Maps opens in the
 * user's preferred mode.
 */
const DIRFLG: Record<TravelMode, string | null> = { automobile: 'd', walking: 'w', transit: 'r', cycling: null };

const MODE_WORDS: Record<TravelMode, string> = {
  automobile: 'by car',
  walking: 'on foot',
  transit: 'by public transit',
  cycling: 'by bike',
};

/** Where navigate goes: `to` as Maps should open it, `label` as the user reads it. */
export interface NavigateDestination {
  to: string;
  label: string;
}

/**
 * The destination as the phone (or a link) should open it: coordinates as lat,lon; a place an earlier
 * answer named by its address (its coordinates when it has none); a saved place by its name as the phone
 * spells it (its coordinates stay on the phone, which resolves it); anything else as the text given.
 * The host asks no one: navigate opens Maps, which looks the text up itself.
 */
export function navigateDestination(
  home: string,
  to: Exclude<PlaceInput, { kind: 'me' }>,
  places: PlaceCache,
  savedNames: readonly string[],
): NavigateDestination | { error: string } {
  switch (to.kind) {
    case 'coordinate': {
      const text = latLon(to.lat, to.lon);
      return { to: text, label: text };
    }
    case 'place_id': {
      const place = places.find(home, to.id);
      if (!place) return { error: MAPS_REFUSALS.unknownPlaceId(to.id) };
      const address = place.address?.trim();
      const resolved = address && address.length <= DESTINATION_MAX_CHARS ? address : latLon(place.lat, place.lon);
      return { to: resolved, label: place.name };
    }
    case 'text': {
      const saved = savedPlaceNamed(to.text, savedNames);
      return saved ? { to: saved, label: saved } : { to: to.text, label: to.text };
    }
  }
}

/**
 * An Apple Maps directions link for a text chat: the destination and the mode only. No `saddr`, so Maps
 * starts from wherever the phone is and the user's own coordinates never enter the link.
 */
export function appleMapsLink(to: string, mode: TravelMode): string {
  const flag = DIRFLG[mode];
  return `https://maps.apple.com/?daddr=${encodeURIComponent(to)}${flag ? `&dirflg=${flag}` : ''}`;
}

/** A title within the prompt's bound: the model's, or "Directions to <place>" shortened to fit. */
function titleFor(request: NavigateRequest, label: string): string {
  if (request.title) return request.title;
  const prefix = 'Directions to ';
  const room = PRESENT_LIMITS.titleMaxChars - prefix.length;
  return prefix + (label.length > room ? `${label.slice(0, room - 1)}…` : label);
}

/** Markdown that names the destination and the mode: what the user OKs. */
function previewFor(destination: NavigateDestination, mode: TravelMode): string {
  const where = destination.label === destination.to ? destination.to : `${destination.label} (${destination.to})`;
  return `Open Apple Maps with directions to **${where}**, ${MODE_WORDS[mode]}.`;
}

/** The prompt navigate keeps, carrying `maps: {to, mode}` for Conduit to open. */
export function navigatePrompt(
  request: NavigateRequest,
  destination: NavigateDestination,
  sessionId: string,
): NavigatePrompt {
  return {
    title: titleFor(request, destination.label),
    preview: previewFor(destination, request.mode),
    actionLabel: NAVIGATE_PROMPT.actionLabel,
    spokenYes: [...NAVIGATE_PROMPT.spokenYes],
    sessionId,
    ttlMinutes: NAVIGATE_PROMPT.ttlMinutes,
    maps: { to: destination.to, mode: request.mode },
  };
}

/**
 * navigate's answer for the model: a prompt on the phone through `navigator`, given only when the
 * profile's Conduit opens Maps (maps-navigate in its last present exchange); else, with null, a link to
 * send in the chat.
 */
export async function navigate(
  navigator: MapsNavigator | null,
  profile: ProfileScope,
  request: NavigateRequest,
  destination: NavigateDestination,
  sessionId: string,
): Promise<{ ok: true; result: Record<string, unknown> } | { ok: false; error: string }> {
  if (navigator) {
    const asked = await navigator.ask(profile, navigatePrompt(request, destination, sessionId));
    if (!asked.ok) return { ok: false, error: asked.message };
    return {
      ok: true,
      result: {
        navigate: 'phone',
        prompt_id: asked.promptId,
        to: destination.to,
        mode: request.mode,
        expires_at: new Date(asked.expiresAtS * 1000).toISOString(),
        phone_notified: asked.phoneNotified,
        note: 'Conduit opens Apple Maps with these directions at once if the user is in this chat with Conduit open; otherwise it shows a Go button and a notification, answered by tap or by saying "go" in a call. The prompt\'s state is conduit_present\'s (status with this id).',
      },
    };
  }
  const link = appleMapsLink(destination.to, request.mode);
  return {
    ok: true,
    result: {
      navigate: 'link',
      link,
      to: destination.to,
      mode: request.mode,
      note:
        "The user's Conduit cannot open Maps from here; send this Apple Maps link in the chat: it opens directions from wherever the user is." +
        (request.mode === 'cycling' ? ' Apple Maps links cannot preselect cycling; the user picks it in Maps.' : ''),
    },
  };
}
