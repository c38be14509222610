import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailBodyRefusals, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

/**
 * Confirm prompts (`conduit_present`, the seed): Hermes keeps a prompt on the host, the phone is nudged
 * with a `phone.changes` relay event (event id `present:<id>`), and Conduit answers and fetches waiting
 * prompts with one POST /present/exchange. The bounds the phone shows and the host enforces live here.
 */
export const PRESENT_LIMITS = {
  /** What fits a panel's headline and a notification title. */
  titleMaxChars: 80,
  /** Markdown the panel scrolls; the tool refuses more rather than cutting what the user OKs. */
  previewMaxChars: 2000,
  /** A button label; longer ones wrap on a phone. */
  actionLabelMaxChars: 24,
  /** Phrases that count as "yes" when the prompt is answered by voice in a call. */
  spokenYesMax: 5,
  spokenYesMaxChars: 40,
  ttlDefaultMinutes: 30,
  /** A day: a prompt older than that is about a moment that has passed. */
  ttlMaxMinutes: 1440,
  /**
   * The seed's bound; counted from the call's start, so the whole call stays within it and well inside
   * the time an MCP client gives a tool call.
   */
  waitMaxSeconds: 120,
  /** A corrected request in the user's words; the model sends it again itself. */
  editTextMaxChars: 2000,
  /** An exchange answers a handful of prompts; 50 covers any backlog a phone can show. */
  resultsPerExchange: 50,
  /** Features a Conduit advertises (`present-v1`, `maps-navigate`, …). */
  featuresMax: 32,
  featureMaxChars: 40,
} as const;

/** The feature a Conduit advertises in its exchange when it shows confirm prompts. */
export const PRESENT_FEATURE = 'present-v1';
/** The feature a Conduit advertises when a prompt carrying `maps` opens Apple Maps (navigate). */
export const MAPS_NAVIGATE_FEATURE = 'maps-navigate';

export const PRESENT_STATES = ['waiting', 'confirmed', 'declined', 'edit', 'expired', 'cancelled'] as const;
export type PresentState = (typeof PRESENT_STATES)[number];

/** What the phone can answer; `expired` and `cancelled` are the host's. */
export const PRESENT_OUTCOMES = ['confirmed', 'declined', 'edit'] as const;
export type PresentOutcome = (typeof PRESENT_OUTCOMES)[number];

/** How a travel mode is named to Apple Maps' directions. */
export const PRESENT_MAPS_MODES = ['automobile', 'walking', 'transit', 'cycling'] as const;

/** A navigate prompt's destination and travel mode, carried through for Conduit to open Apple Maps. */
export const presentMaps = z.object({
  /** The place as the maps feature resolved it (an address, `place_id:<id>` or `lat,lon`). */
  to: z.string().min(1).max(500),
  mode: z.enum(PRESENT_MAPS_MODES),
});
export type PresentMaps = z.infer<typeof presentMaps>;

/** One answer the phone reports. */
export const presentResult = z.object({
  id: z.string().min(1).max(64),
  outcome: z.enum(PRESENT_OUTCOMES),
  /** The user's correction, on `edit` only (ignored otherwise). */
  edit_text: z.string().max(PRESENT_LIMITS.editTextMaxChars).optional(),
  via: z.enum(['tap', 'voice']),
});
export type PresentResult = z.infer<typeof presentResult>;

export const presentExchangeRequest = z.object({
  installation_id: z.string().min(1).max(128),
  /** The device's name as the user sees it. */
  device: z.string().max(128),
  app_version: z.string().max(40),
  /** What this Conduit can do; `present-v1` offers the tool to Hermes. */
  features: z.array(z.string().max(PRESENT_LIMITS.featureMaxChars)).max(PRESENT_LIMITS.featuresMax).optional(),
  results: z.array(presentResult).max(PRESENT_LIMITS.resultsPerExchange).default([]),
});
export type PresentExchangeRequest = z.infer<typeof presentExchangeRequest>;

/** A waiting prompt as the phone shows it. Times are Unix seconds. */
export const presentPrompt = z.object({
  id: z.string(),
  title: z.string(),
  /** Markdown. */
  preview: z.string(),
  action_label: z.string(),
  spoken_yes: z.array(z.string()),
  /** The chat that asked. */
  session_id: z.string(),
  created_at: z.number(),
  expires_at: z.number(),
  maps: presentMaps.optional(),
});
export type PresentPrompt = z.infer<typeof presentPrompt>;

export const presentExchangeResponse = z.object({
  ok: z.literal(true),
  /** Every prompt still waiting, after this exchange's answers; oldest first. */
  prompts: z.array(presentPrompt),
});

/**
 * Reports answers (the first answer to a prompt wins; answers for unknown or finished prompts are
 * ignored) and fetches the prompts still waiting.
 */
export const postPresentExchange = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/present/exchange',
  operationId: 'postPresentExchange',
  summary: 'Report confirm prompt answers and fetch the waiting prompts',
  tags: ['present'],
  auth: 'bearer',
  query: profileQuery,
  body: presentExchangeRequest,
  bodyContentType: 'application/json',
  responses: {
    200: noStoreAnswer('The prompts still waiting.', presentExchangeResponse),
    401: unauthorized,
    ...detailBodyRefusals,
    429: detailAnswer('More than 60 exchanges a minute for this profile.'),
    500: detailAnswer('An unexpected failure, named by its type only.'),
    503: detailUnavailable(
      'The profile cannot be resolved, or its conduit-present.json cannot be read (left unchanged).',
    ),
  },
});
