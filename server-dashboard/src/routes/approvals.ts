import type { FastifyInstance } from 'fastify';
import { respondApproval } from '@conduit/contracts/dashboard/approvals';
import { bindRoute } from '@conduit/contracts/server';
import type { ApprovalCards } from '../cards/approval-cards.js';
import { resolveProfile } from '../fronting/profiles.js';

const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/**
 * An approval card answered from the phone through this host reaches Hermes through its API server,
 * by the same path as an answer polled from the relay. The order of checks: profile, the approval
 * still waiting (answered natively or from the relay first → 409), a run to answer (from the card's
 * hook or the caller), then Hermes itself.
 */
export function approvalRoutes(app: FastifyInstance, options: { hermesHome: string; cards: ApprovalCards }): void {
  bindRoute(app, respondApproval, async ({ query, body }) => {
    const profile = resolveProfile(options.hermesHome, query.profile);
    const result = await options.cards.answer(profile, body.session_key, body.choice, body.run_id);
    switch (result.kind) {
      case 'already_answered':
        return { status: 409, body: { error: 'already_answered' }, headers: NO_STORE };
      case 'unknown':
        return { status: 404, body: { error: 'unknown_approval' }, headers: NO_STORE };
      case 'no_hermes':
        return { status: 501, body: { error: 'hermes_api_not_configured' }, headers: NO_STORE };
      case 'run_unknown':
        return { status: 409, body: { error: 'run_unknown' }, headers: NO_STORE };
      case 'accepted':
        return { status: 200, body: { ok: true, choice: body.choice, run_id: result.runId }, headers: NO_STORE };
      case 'run_not_found':
        return { status: 404, body: { error: 'run_not_found' }, headers: NO_STORE };
      default:
        return {
          status: 502,
          body: { error: result.kind === 'unreachable' ? 'hermes_unreachable' : 'hermes_refused' },
          headers: NO_STORE,
        };
    }
  });
}
