import type { FastifyInstance } from 'fastify';
import { respondApproval, respondApprovalBody } from '@conduit/contracts/dashboard/approvals';
import { bindRoute } from '@conduit/contracts/server';
import type { ApprovalBook } from '../cards/approval-book.js';
import type { HermesApi } from '../cards/hermes-api.js';
import { resolveProfile } from '../fronting/profiles.js';

const NO_STORE = { 'cache-control': 'no-store' };

/**
 * An approval card answered from the phone reaches Hermes through its API server. The order of checks:
 * profile, the approval still waiting (answered natively first → 409), a run to answer (from the
 * card's hook or the caller), then Hermes itself.
 */
export function approvalRoutes(
  app: FastifyInstance,
  options: { hermesHome: string; book: ApprovalBook; hermes: HermesApi | null },
): void {
  bindRoute(app, respondApproval, async ({ query, body }) => {
    const profile = resolveProfile(options.hermesHome, query.profile);
    const input = respondApprovalBody.parse(body as unknown);
    const found = options.book.lookup(profile, input.session_key);
    if (found.state === 'settled') return { status: 409, body: { error: 'already_answered' }, headers: NO_STORE };
    if (found.state === 'unknown') return { status: 404, body: { error: 'unknown_approval' }, headers: NO_STORE };
    if (!options.hermes) return { status: 501, body: { error: 'hermes_api_not_configured' }, headers: NO_STORE };
    const runId = found.runId ?? input.run_id;
    if (!runId) return { status: 409, body: { error: 'run_unknown' }, headers: NO_STORE };
    const result = await options.hermes.answerApproval(runId, input.choice, found.requestId);
    if (result === 'accepted') {
      options.book.answered(profile, input.session_key);
      return { status: 200, body: { ok: true, choice: input.choice, run_id: runId }, headers: NO_STORE };
    }
    if (result === 'run_not_found') return { status: 404, body: { error: 'run_not_found' }, headers: NO_STORE };
    return {
      status: 502,
      body: { error: result === 'unreachable' ? 'hermes_unreachable' : 'hermes_refused' },
      headers: NO_STORE,
    };
  });
}
