import { z } from 'zod';
import { defineRoute, errorBody } from '../route.js';
import { bodyRefusals, INVALID_JSON, noStore, serviceUnavailable, unauthorized } from './notification-settings.js';
import { profileQuery } from './profile.js';

export const approvalChoice = z.enum(['once', 'session', 'always', 'deny'], { error: 'invalid_choice' });

export const respondApprovalBody = z.object({
  /** The card's session_key (from the approval.needed decision). */
  session_key: z.string().trim().min(1).max(500),
  choice: approvalChoice,
  /** The Hermes API server run waiting on this approval, when the caller knows it. */
  run_id: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'invalid_run_id')
    .optional(),
});

/**
 * Answers an approval card from the phone. The host passes the choice to the Hermes API server run
 * that waits on it (POST /v1/runs/{run_id}/approval). An approval answered natively first (Hermes'
 * post_approval_response hook) retires the card: a later answer gets 409 already_answered.
 */
export const respondApproval = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/approvals/respond',
  operationId: 'respondApproval',
  summary: 'Answer an approval card',
  tags: ['plugin'],
  auth: 'bearer',
  query: profileQuery,
  body: respondApprovalBody,
  invalidBodyCode: 'invalid_request',
  responses: {
    200: {
      description: 'Hermes took the answer.',
      schema: z.object({ ok: z.literal(true), choice: approvalChoice, run_id: z.string() }),
      headers: noStore,
    },
    400: {
      description: 'Malformed body, or a body that is not JSON.',
      schema: errorBody(['invalid_request', 'invalid_choice', 'invalid_run_id', INVALID_JSON]),
    },
    401: unauthorized,
    404: {
      description: 'No approval of this profile waits under that session key, or Hermes no longer knows the run.',
      schema: errorBody(['unknown_approval', 'run_not_found']),
    },
    409: {
      description: 'Answered elsewhere first (natively, or by another device), or the run is not reachable by id.',
      schema: errorBody(['already_answered', 'run_unknown']),
    },
    501: {
      description: 'No Hermes API server is configured on this host.',
      schema: errorBody(['hermes_api_not_configured']),
    },
    502: {
      description: 'The Hermes API server could not be reached or refused.',
      schema: errorBody(['hermes_unreachable', 'hermes_refused']),
    },
    ...bodyRefusals,
    503: serviceUnavailable,
  },
});
