import { z } from 'zod';
import { defineRoute } from '../route.js';
import {
  beforeTheRoute,
  errorOf,
  installationIdParam,
  installationSchema,
  lenient,
  malformedId,
  rateLimited,
  sharedStateUnavailable,
  tooLarge,
  unauthorized,
  unreadBodyTooLarge,
} from './shared.js';

/** The 400 codes of a body with tokens, in the order they are checked. */
const TOKEN_ERRORS = [
  'invalid_json',
  'invalid_device_token',
  'invalid_voip_token',
  'invalid_watch_voip_token',
  'invalid_location_push_token',
] as const;

const APNS_TOKEN = /^[0-9a-f]{64,200}$/;

/**
 * An APNs token as apps send it: `<`, `>` and whitespace removed, lowercased, then 64–200 hex. Any value
 * is read as text first, as the reference's `String(v)` does. (A refinement rather than a pattern, so
 * the description does not claim the raw spellings are refused.)
 */
const token = z
  .preprocess(
    (value) =>
      value === undefined || value === null
        ? value
        : String(value as string)
            .replace(/[<>\s]/g, '')
            .toLowerCase(),
    z.string().refine((normalised) => APNS_TOKEN.test(normalised)),
  )
  .describe('APNs token, hex (64–200 after removing <, > and whitespace; case-insensitive).');

/** Each token's code, in the order the reference checks them. */
const tokenErrorCodes = {
  device_token: 'invalid_device_token',
  voip_token: 'invalid_voip_token',
  watch_voip_token: 'invalid_watch_voip_token',
  location_push_token: 'invalid_location_push_token',
} as const;

/** Preferences of any other shape are ignored (the stored or default ones stay). */
const preferencesUpdate = lenient(z.record(z.string(), z.unknown()));

/** Route 2: a phone registers; the answer carries its device credential exactly once. */
export const registerInstallation = defineRoute({
  method: 'POST',
  path: '/v1/installations',
  operationId: 'registerInstallation',
  summary: 'Register a phone',
  tags: ['installations'],
  auth: 'none',
  bodyReading: 'handler',
  // In the reference's order of checks: the tokens, then the topic, then the environment.
  body: z.object({
    device_token: token,
    voip_token: token.nullable().optional(),
    watch_voip_token: token.nullable().optional(),
    location_push_token: token
      .nullable()
      .optional()
      .describe(
        'The Location Push Service Extension token (startMonitoringLocationPushes); location.request goes to it.',
      ),
    bundle_id: z.string().describe("The app's bundle id: the relay's APNS_TOPIC."),
    environment: z.literal('production'),
    preferences: preferencesUpdate,
  }),
  bodyErrorCodes: { ...tokenErrorCodes, bundle_id: 'invalid_topic', environment: 'production_only' },
  responses: {
    201: {
      description: 'Registered.',
      schema: z.object({
        installation: installationSchema,
        credential: z.string().describe('`<installationId>.<deviceSecret>`'),
        relay_url: z.string(),
      }),
    },
    400: {
      description: 'Invalid body or token.',
      schema: errorOf([...TOKEN_ERRORS, 'invalid_topic', 'production_only']),
    },
    413: tooLarge,
    429: {
      description: 'Per-IP limit, installation capacity, or the registration budget.',
      schema: errorOf(['rate_limited', 'installation_limit_reached']),
    },
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

/** Route 3: tokens and preferences; a semantic no-op writes nothing. */
export const updateInstallation = defineRoute({
  method: 'PUT',
  path: '/v1/installations/{id}',
  operationId: 'updateInstallation',
  summary: 'Update tokens and preferences',
  tags: ['installations'],
  auth: 'device',
  params: installationIdParam,
  bodyReading: 'handler',
  body: z.object({
    device_token: token.optional(),
    voip_token: token.nullable().optional().describe('null clears the PushKit token; absent keeps it.'),
    watch_voip_token: token.nullable().optional(),
    location_push_token: token.nullable().optional().describe('null clears the location push token; absent keeps it.'),
    preferences: preferencesUpdate.describe('Merged over the stored preferences.'),
  }),
  bodyErrorCodes: tokenErrorCodes,
  responses: {
    200: { description: 'The installation after the update.', schema: z.object({ installation: installationSchema }) },
    400: {
      description: 'Invalid body or token.',
      schema: errorOf([...TOKEN_ERRORS]),
    },
    401: unauthorized,
    404: malformedId,
    413: tooLarge,
    429: rateLimited,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});

/** Route 4: deactivation (the slot is not freed). */
export const deleteInstallation = defineRoute({
  method: 'DELETE',
  path: '/v1/installations/{id}',
  operationId: 'deleteInstallation',
  summary: 'Deactivate an installation',
  tags: ['installations'],
  auth: 'device',
  params: installationIdParam,
  responses: {
    204: { description: 'Deactivated.' },
    401: unauthorized,
    404: malformedId,
    413: unreadBodyTooLarge,
    429: rateLimited,
    503: sharedStateUnavailable,
    ...beforeTheRoute,
  },
});
