import http from 'node:http';
import { LoopbackDouble } from './loopback-server.js';

/**
 * A small relay for host tests, speaking spec/relay/API.md's gateway wire: POST /v1/events (202
 * {accepted, delivered} or 200 {accepted, duplicate} by gateway-scoped event id; 429
 * decision_capacity_exceeded past `maxActiveDecisions`, id not consumed), GET and DELETE
 * /v1/decisions/:id with the documented poll shapes. Tests script failures and answer decisions as
 * a phone would. (The e2e test uses the real relay.)
 */
export interface RecordedEvent {
  authorization: string | undefined;
  userAgent: string | undefined;
  body: Record<string, unknown>;
}

interface Decision {
  questions: string[];
  answers: Record<string, string>;
  scalarAnswer?: string;
  released: boolean;
  deliverable: boolean;
}

export class FakeRelay extends LoopbackDouble {
  readonly events: RecordedEvent[] = [];
  readonly decisions = new Map<string, Decision>();
  readonly released: string[] = [];
  /** Decision ids asked for with GET /v1/decisions/:id, in order. */
  readonly polled: string[] = [];
  /** Statuses (with bodies) answered to the next POST /v1/events, before accepting normally. */
  readonly scripted: { status: number; body?: unknown }[] = [];
  /** When set, event posts wait this long (a slow relay). */
  delayMs = 0;
  deliverable = true;
  /**
   * Active decisions the relay holds at most (its RELAY_MAX_ACTIVE_DECISIONS); past it an event that
   * would park one gets 429 decision_capacity_exceeded and its id is not consumed.
   */
  maxActiveDecisions = Infinity;
  private readonly seen = new Set<string>();
  /** Live Activity progress reports (POST /v1/live-activities/progress), in order. */
  readonly progress: Record<string, unknown>[] = [];
  /** Sessions a phone watches with a Live Activity; false: a relay without the route (404). */
  liveActivities: Set<string> | false = new Set();

  /** Answers a parked decision as the phone does (per qid for a batch). */
  answer(requestId: string, answers: Record<string, string> | string): void {
    const decision = this.decisions.get(requestId);
    if (!decision) throw new Error(`no decision ${requestId}`);
    if (typeof answers === 'string') decision.scalarAnswer = answers;
    else Object.assign(decision.answers, answers);
  }

  /** Decisions still waiting for an answer (not released, some question open). */
  activeDecisions(): number {
    let active = 0;
    for (const d of this.decisions.values()) {
      const open = d.questions.length === 0 ? d.scalarAnswer === undefined : d.questions.some((q) => !(q in d.answers));
      if (!d.released && open) active++;
    }
    return active;
  }

  private send(res: http.ServerResponse, status: number, body?: unknown) {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end(body === undefined ? '' : JSON.stringify(body));
  }

  protected async handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://x');
    const auth = req.headers.authorization;
    if (!auth || !/^Bearer [0-9a-f-]+\.[0-9a-f-]+\.[A-Za-z0-9_-]+$/i.test(auth))
      return this.send(res, 401, { error: 'unauthorized' });
    if (req.method === 'POST' && url.pathname === '/v1/events') {
      if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      this.events.push({ authorization: auth, userAgent: req.headers['user-agent'], body });
      const scripted = this.scripted.shift();
      if (scripted) return this.send(res, scripted.status, scripted.body);
      const id = String(body.event_id);
      if (this.seen.has(id)) return this.send(res, 200, { accepted: true, duplicate: true });
      const decision = body.decision as
        { kind?: string; request_id?: string; questions?: { qid: string }[] } | undefined;
      // A clarify card, or an approval card that names a request id (our relay's extension), is parked;
      // a sealed event parks through its `clarify` descriptor.
      const sealed = body.clarify as { request_id?: string; qids?: string[] } | undefined;
      const parkId = body.e2e ? sealed?.request_id : decision?.request_id;
      if (parkId && this.activeDecisions() >= this.maxActiveDecisions)
        return this.send(res, 429, { error: 'decision_capacity_exceeded' });
      this.seen.add(id);
      if (parkId) {
        this.decisions.set(parkId, {
          questions: decision?.questions?.map((q) => q.qid) ?? sealed?.qids ?? [],
          answers: {},
          released: false,
          deliverable: this.deliverable,
        });
      }
      return this.send(res, 202, { accepted: true, delivered: true });
    }
    if (req.method === 'POST' && url.pathname === '/v1/live-activities/progress') {
      if (this.liveActivities === false) return this.send(res, 404, { error: 'not_found' });
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      this.progress.push(body);
      const watching = this.liveActivities.has(String(body.session_id));
      return this.send(res, 200, { watching, sent: watching ? 1 : 0 });
    }
    const match = /^\/v1\/decisions\/([A-Za-z0-9_-]{4,128})$/.exec(url.pathname);
    if (match?.[1]) {
      const id = match[1];
      const decision = this.decisions.get(id);
      if (req.method === 'DELETE') {
        if (!decision) return this.send(res, 404, { error: 'unknown_decision' });
        this.released.push(id);
        decision.released = true;
        return this.send(res, 200, { status: 'cancelled' });
      }
      this.polled.push(id);
      if (!decision || decision.released) return this.send(res, 200, { status: 'unknown' });
      if (decision.questions.length === 0) {
        return decision.scalarAnswer !== undefined
          ? this.send(res, 200, { status: 'answered', answer: decision.scalarAnswer })
          : this.send(res, 200, { status: 'pending', deliverable: decision.deliverable });
      }
      const remaining = decision.questions.filter((q) => !(q in decision.answers));
      if (remaining.length === 0)
        return this.send(res, 200, { status: 'answered', answers: decision.answers, remaining: [] });
      return this.send(res, 200, { status: 'pending', deliverable: decision.deliverable, remaining, answers: {} });
    }
    return this.send(res, 404, { error: 'not_found' });
  }
}
