import type { FastifyInstance } from 'fastify';
import { bindRoute, WireError, type BoundRequest } from '@conduit/contracts/server';
import { pollDecision, releaseDecision, respondDecision, respondDecisionLegacy } from '@conduit/contracts/relay/index';
import {
  applyAnswer,
  decisionKey,
  isActive,
  isExpired,
  normalizeAnswer,
  pollShape,
  resolveLegacyTarget,
  type DecisionRecord,
} from '../domain/decisions.js';
import { cleanIdentifier, cleanText } from '../domain/text.js';
import { FIXED_LIMITS } from '../limits.js';
import { authenticateDevice, authenticateGateway, ipOf, limit, type RelayContext } from '../relay-context.js';
import { readJson } from '../http/read-json.js';

async function liveDecision(context: RelayContext, key: string): Promise<DecisionRecord | null> {
  const decision = await context.store.findDecision(key);
  return decision && !isExpired(decision, context.now()) ? decision : null;
}

export function decisionRoutes(app: FastifyInstance, context: RelayContext): void {
  const { limits } = context.config;

  const respond = async ({ params, request }: BoundRequest<typeof respondDecision>) => {
    limit(context, `decision-respond-ip:${ipOf(context, request)}`, FIXED_LIMITS.decisionRespondPerIp);
    // Authenticated before the body is read: an anonymous caller cannot make the relay parse anything.
    const installation = await authenticateDevice(context, request);
    limit(context, `decision-respond:${installation.id}`, FIXED_LIMITS.decisionRespondPerInstallation);
    const body = readJson(request);
    const answer = normalizeAnswer(body.answer, cleanText);
    if (!answer) throw new WireError(400, 'invalid_answer');
    const questionId = cleanText(body.question_id, 40);
    const gatewayId = cleanIdentifier(body.gateway_id, 80);
    let target: DecisionRecord;
    if (gatewayId) {
      const decision = await liveDecision(context, decisionKey(installation.id, gatewayId, params.id));
      if (!decision) throw new WireError(404, 'unknown_decision');
      target = decision;
    } else {
      const now = context.now();
      const holders = (await context.store.findDecisionsByRequest(installation.id, params.id)).filter(
        (decision) => !isExpired(decision, now),
      );
      const resolved = resolveLegacyTarget(holders);
      if (!resolved.ok) throw new WireError(resolved.status, resolved.code);
      target = resolved.decision;
    }
    const outcome = applyAnswer(target, answer, questionId, context.now());
    if (!outcome.ok) throw new WireError(outcome.status, outcome.code);
    // Only a mutating answer spends the relay-wide decision budget.
    limit(context, 'decision-global', limits.decisionActionsPerMinute);
    await context.store.saveDecision(outcome.decision);
    return {
      status: 200 as const,
      body:
        outcome.remaining !== undefined
          ? { status: 'answered' as const, remaining: outcome.remaining }
          : { status: 'answered' as const },
    };
  };
  bindRoute(app, respondDecision, respond);
  bindRoute(app, respondDecisionLegacy, respond);

  bindRoute(app, pollDecision, async ({ params, request }) => {
    const { installation, gateway } = await authenticateGateway(context, request);
    limit(context, `decision-poll:${gateway.id}`, FIXED_LIMITS.decisionPollPerGateway);
    const decision = await context.store.findDecision(decisionKey(installation.id, gateway.id, params.id));
    return { status: 200, body: pollShape(decision, context.now()) };
  });

  bindRoute(app, releaseDecision, async ({ params, request }) => {
    const { installation, gateway } = await authenticateGateway(context, request);
    limit(context, `decision-cancel:${gateway.id}`, FIXED_LIMITS.decisionCancelPerGateway);
    const decision = await liveDecision(context, decisionKey(installation.id, gateway.id, params.id));
    if (!decision) throw new WireError(404, 'unknown_decision');
    // Repeated releases answer the same without rewriting or spending budget.
    if (decision.cancelledAt !== undefined) return { status: 200, body: { status: 'cancelled' } };
    if (!isActive(decision)) return { status: 200, body: { status: 'already_completed' } };
    limit(context, 'decision-global', limits.decisionActionsPerMinute);
    await context.store.saveDecision({ ...decision, cancelledAt: context.now() });
    return { status: 200, body: { status: 'cancelled' } };
  });
}
