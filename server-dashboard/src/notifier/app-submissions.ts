import type { IncomingHttpHeaders } from 'node:http';
import type { Clock } from '../clock.js';
import { setBounded } from '../bounded-map.js';

/** The app connections a "response ready" choice can name by the socket that sent the turn. */
export type AppSource = 'conduit' | 'desktop';

/** A submission starts its turn within this long, or it is forgotten. */
const SUBMISSION_TTL_MS = 10 * 60_000;
/** Per profile; the oldest submissions go first. */
const MAX_SUBMISSIONS = 256;
/** Profiles named by clients; the one written longest ago goes first. */
const MAX_PROFILES = 64;
/** Only the start of a prompt is kept to match it: enough to tell turns apart, never a whole paste. */
const MATCH_CHARS = 2_000;

export function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/**
 * The seed's classification of a gateway socket by its upgrade request: Conduit's carries
 * X-Conduit-Client (its Watch jobs too); another browser engine (a `Mozilla/` User-Agent: Desktop's
 * renderer or the web dashboard) is Desktop. Anything else (the TUI, hosted rooms) is not an app.
 */
export function appSourceOf(headers: IncomingHttpHeaders): AppSource | null {
  if (header(headers, 'x-conduit-client').trim()) return 'conduit';
  return header(headers, 'user-agent').includes('Mozilla/') ? 'desktop' : null;
}

interface Submission {
  profile: string | null;
  source: AppSource;
  text: string;
  at: number;
}

function matchKey(text: string): string {
  return text.trim().slice(0, MATCH_CHARS);
}

/** A JSON-RPC `prompt.submit` with text: what to record of it (profile, when it names one, and text). */
export function promptOf(message: string): { profile: string | null; text: string } | null {
  if (!message.includes('prompt.submit')) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return null;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
  const rpc = parsed as { method?: unknown; params?: unknown };
  if (rpc.method !== 'prompt.submit' || !rpc.params || typeof rpc.params !== 'object') return null;
  const params = rpc.params as { text?: unknown; profile?: unknown };
  if (typeof params.text !== 'string' || !params.text.trim()) return null;
  const profile = typeof params.profile === 'string' && params.profile.trim() ? params.profile.trim() : null;
  return { profile, text: params.text };
}

/**
 * Which app sent the message that started a turn. The gateway socket names live session handles that
 * only Hermes' dashboard process maps to stored chats, so a turn is matched by its text instead: the
 * `prompt.submit` the proxy saw last before the turn started, with the text Hermes' hooks report as the
 * turn's user message. When apps disagree (the same text from Conduit and Desktop), or nothing matches
 * (Hermes rewrote the message, the socket bypassed this host), the turn is not placed here.
 */
export class AppSubmissions {
  private readonly byProfile = new Map<string, Submission[]>();

  constructor(private readonly clock: Clock) {}

  record(profile: string | null, source: AppSource, text: string): void {
    const key = matchKey(text);
    if (!key) return;
    const bucket = profile ?? '';
    const list = this.byProfile.get(bucket) ?? [];
    list.push({ profile, source, text: key, at: this.clock.now() });
    while (list.length > MAX_SUBMISSIONS) list.shift();
    setBounded(this.byProfile, bucket, list, MAX_PROFILES);
  }

  /**
   * The app that sent `userMessage` for a turn of `profile` that started at `startedAt`, or null.
   * A matched submission is consumed, so the next turn with the same text needs its own submission.
   */
  placeTurn(profile: string, userMessage: string, startedAt: number): AppSource | null {
    const key = matchKey(userMessage);
    if (!key) return null;
    const now = this.clock.now();
    // A submission that names no profile went to the dashboard's default one.
    const buckets = profile === 'default' ? [profile, ''] : [profile];
    let best: { list: Submission[]; index: number } | null = null;
    const sources = new Set<AppSource>();
    for (const bucket of buckets) {
      const list = this.byProfile.get(bucket);
      if (!list) continue;
      while (list.length && now - (list[0]?.at ?? 0) > SUBMISSION_TTL_MS) list.shift();
      list.forEach((entry, index) => {
        if (entry.at > startedAt || entry.text !== key) return;
        sources.add(entry.source);
        if (!best || entry.at >= (best.list[best.index]?.at ?? 0)) best = { list, index };
      });
    }
    const found = best as { list: Submission[]; index: number } | null;
    if (!found || sources.size !== 1) return null;
    const [placed] = found.list.splice(found.index, 1);
    return placed?.source ?? null;
  }
}
