import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * Which Hermes turn an MCP tool call came from. Hermes calls this service's MCP tools without saying
 * which session asked, but it runs the `pre_tool_call` shell hook first (with the session, turn and
 * tool call ids) and lets the hook modify the call's arguments. The hook handler adds one argument,
 * `_conduit_context`: a short-lived token this process signs, naming the profile, the session and
 * whether it is a subagent. The tool reads the session from the token and never from anything the
 * model wrote, so a model cannot place a call from another chat by naming it.
 */
export const TOOL_CONTEXT_ARG = '_conduit_context';

/** A tool call runs right after its hook; ten minutes covers a slow MCP round trip, not replay. */
const CONTEXT_TTL_MS = 10 * 60_000;

const payloadShape = z.object({
  /** Profile home the hook came from. */
  h: z.string(),
  s: z.string(),
  /** The turn id, when Hermes gave one. */
  t: z.string().optional(),
  /** A subagent's session. */
  c: z.boolean(),
  /** The cron job whose run this is (Hermes' `cron:<job id>:…` task), when it is one. */
  j: z.string().optional(),
  /** Expiry, ms since the epoch. */
  e: z.number(),
});

export interface ToolContext {
  home: string;
  sessionId: string;
  turnId: string | undefined;
  isChild: boolean;
  /** The cron job whose run made the call; undefined for a chat turn. */
  cronJobId: string | undefined;
}

export class ToolContextSigner {
  private readonly key = randomBytes(32);

  constructor(private readonly now: () => number) {}

  private sign(body: string): Buffer {
    return createHmac('sha256', this.key).update(body).digest();
  }

  mint(context: ToolContext): string {
    const payload: z.infer<typeof payloadShape> = {
      h: context.home,
      s: context.sessionId,
      c: context.isChild,
      e: this.now() + CONTEXT_TTL_MS,
      ...(context.turnId ? { t: context.turnId } : {}),
      ...(context.cronJobId ? { j: context.cronJobId } : {}),
    };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.sign(body).toString('base64url')}`;
  }

  /** The context of a token this process minted for `home`, still fresh; null for anything else. */
  verify(token: unknown, home: string): ToolContext | null {
    if (typeof token !== 'string' || token.length > 4096) return null;
    const [body, mac, extra] = token.split('.');
    if (!body || !mac || extra !== undefined) return null;
    const expected = this.sign(body);
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return null;
    }
    const parsed = payloadShape.safeParse(json);
    if (!parsed.success || parsed.data.h !== home || parsed.data.e < this.now()) return null;
    return {
      home: parsed.data.h,
      sessionId: parsed.data.s,
      turnId: parsed.data.t,
      isChild: parsed.data.c,
      cronJobId: parsed.data.j,
    };
  }
}
