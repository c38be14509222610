import type { FastifyInstance } from 'fastify';
import { bindRoute, WireError, type BoundRequest } from '@conduit/contracts/server';
import { pollDecision, releaseDecision, respondDecision, respondDecisionLegacy } from '@conduit/contracts/relay/index';
import type { ErrorCodeOf } from '@conduit/contracts/route';
import {
  applyAnswer,
  type AnswerOutcome,
  decisionKey,
  type DecisionRecord,
  isActive,
  isExpired,
  normalizeAnswer,
  pollShape,
  resolveLegacyTarget,
} from '../domain/decisions.js';
import { cleanIdentifier, cleanText } from '../domain/text.js';
import { FIXED_LIMITS } from '../limits.js';
import { authenticateDevice, authenticateGateway, ipOf, limit, type RelayContext } from '../relay-context.js';
import { readJson } from '../http/read-json.js';
import type { DecisionChange } from '../store/relay-store.js';

type FailureStatus = 400 | 404 | 409 | 410;
/** A refusal of an answer, typed to the codes the route declares with those statuses. */
type AnswerFailure = { ok: false; status: FailureStatus; code: ErrorCodeOf<typeof respondDecision, FailureStatus> };

export function decisionRoutes(app: FastifyInstance, context: RelayContext): void {
  const { limits } = context.config;

  /**
   * `updateDecision` where a change that writes first spends the relay-wide decision budget, once however
   * often `decide` runs. `decide` is synchronous (the store may run it again on a fresher record) and the
   * budget is not (replicas share it): a pass that would write stops without writing, the budget is
   * spent, and the change runs again, paid for. A refused budget (429) writes nothing.
   */
  const chargedUpdate = async <T>(key: string, decide: (current: DecisionRecord | null) => DecisionChange<T>) => {
    let charged = false;
    for (;;) {
      let wantsCharge = false;
      const result = await context.store.updateDecision(key, (current): DecisionChange<T> => {
        const change = decide(current);
        if (change.next === undefined || charged) return change;
        wantsCharge = true;
        return { result: change.result };
      });
      if (!wantsCharge) return result;
      await limit(context, 'decision-global', limits.decisionActionsPerMinute);
      charged = true;
    }
  };

  const respond = async ({ params, request, readBody }: BoundRequest<typeof respondDecision>) => {
    await limit(context, `decision-respond-ip:${ipOf(context, request)}`, FIXED_LIMITS.decisionRespondPerIp);
    // Authenticated before the body is read: an anonymous caller cannot make the relay parse anything.
    const installation = await authenticateDevice(context, request);
    await limit(context, `decision-respond:${installation.id}`, FIXED_LIMITS.decisionRespondPerInstallation);
    const body = readBody();
    // The contract refused an answer with no text (invalid_answer); this only cleans it.
    const answer = normalizeAnswer(body.answer, cleanText);
    if (answer === undefined) throw new Error('the contract admitted an answer without text');
    const questionId = cleanText(body.question_id, 40);
    const gatewayId = cleanIdentifier(body.gateway_id, 80);
    const now = context.now();
    let targetKey: string;
    if (gatewayId) {
      targetKey = decisionKey(installation.id, gatewayId, params.id);
    } else {
      const holders = (await context.store.findDecisionsByRequest(installation.id, params.id)).filter(
        (decision) => !isExpired(decision, now),
      );
      const resolved = resolveLegacyTarget(holders);
      if (!resolved.ok) throw new WireError(resolved.status, resolved.code);
      targetKey = resolved.decision.key;
    }
    // First answer wins in the store itself: of simultaneous answers (two devices, a retried request,
    // several relay processes) exactly one is written and the rest see the decision answered (409).
    // Only a mutating answer spends the relay-wide decision budget, once however often it is tried.
    const outcome = await chargedUpdate(targetKey, (current): DecisionChange<AnswerOutcome | AnswerFailure> => {
      if (!current || isExpired(current, now)) {
        return { result: { ok: false, status: 404, code: 'unknown_decision' } };
      }
      const applied = applyAnswer(current, answer, questionId, now);
      if (!applied.ok) return { result: applied };
      return { result: applied, next: applied.decision };
    });
    if (!outcome.ok) throw new WireError(outcome.status, outcome.code);
    return {
      status: 200 as const,
      body:
        outcome.remaining !== undefined
          ? { status: 'answered' as const, remaining: outcome.remaining }
          : { status: 'answered' as const },
    };
  };
  bindRoute(app, respondDecision, respond, { readJson });
  bindRoute(app, respondDecisionLegacy, respond, { readJson });

  bindRoute(app, pollDecision, async ({ params, request }) => {
    const { installation, gateway } = await authenticateGateway(context, request);
    await limit(context, `decision-poll:${gateway.id}`, FIXED_LIMITS.decisionPollPerGateway);
    const decision = await context.store.findDecision(decisionKey(installation.id, gateway.id, params.id));
    return { status: 200, body: pollShape(decision, context.now()) };
  });

  bindRoute(app, releaseDecision, async ({ params, request }) => {
    const { installation, gateway } = await authenticateGateway(context, request);
    await limit(context, `decision-cancel:${gateway.id}`, FIXED_LIMITS.decisionCancelPerGateway);
    const now = context.now();
    // Conditional like an answer: a release racing an answer either lands first (the answer gets 410)
    // or finds the decision answered (already_completed); it never writes over the answer.
    const outcome = await chargedUpdate(
      decisionKey(installation.id, gateway.id, params.id),
      (current): DecisionChange<'unknown' | 'cancelled' | 'already_completed'> => {
        if (!current || isExpired(current, now)) return { result: 'unknown' };
        // Repeated releases answer the same without rewriting or spending budget.
        if (current.cancelledAt !== undefined) return { result: 'cancelled' };
        if (!isActive(current)) return { result: 'already_completed' };
        return { result: 'cancelled', next: { ...current, cancelledAt: now } };
      },
    );
    if (outcome === 'unknown') throw new WireError(404, 'unknown_decision');
    return { status: 200, body: { status: outcome } };
  });
}
