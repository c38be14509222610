import {
  MAX_TEXT_BYTES,
  SESSION_FIELDS_DECIDED_BY_GATEWAY,
  sessionUpdateBody,
  type SessionTool,
  type ToolChoice,
} from '@conduit/contracts/voice/events';
import { parseSessionTools, parseToolChoice } from '../session/session-tools.js';

/** What a `session.update` changes: the fields the gateway applies, and the fields it keeps as sent. */
export interface SessionChange {
  instructions?: string;
  tools?: SessionTool[];
  toolChoice?: ToolChoice;
  /** Fields with no meaning for the gateway (`tracing`, `truncation`, `prompt`, …), returned as sent. */
  kept: Record<string, unknown>;
}

export interface SessionUpdateError {
  code: 'invalid_session' | 'unsupported_session_type' | 'unsupported_tool_choice';
  message: string;
  param: string;
}

const DECIDED = new Set<string>(SESSION_FIELDS_DECIDED_BY_GATEWAY);
const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * Reads the session of a `session.update` as a GA client sends it (the official SDKs send the whole session
 * every time: model, output_modalities, audio formats and voice, turn_detection, tools, tool_choice, tracing…).
 * The gateway applies `instructions`, `tools` and `tool_choice`; it decides `model`, `output_modalities` and
 * `audio` itself (the session it answers says what they are); everything else is kept and returned as sent.
 * A value the gateway applies but cannot use is an error; a field it does not know never is.
 *
 * `currentTools` is what `tool_choice` is checked against when the update does not replace the tools.
 */
export function parseSessionUpdate(
  value: unknown,
  currentTools: readonly SessionTool[],
): { ok: true; change: SessionChange } | { ok: false; error: SessionUpdateError } {
  const parsed = sessionUpdateBody.safeParse(value);
  if (!parsed.success) {
    const type = typeof value === 'object' && value !== null && !Array.isArray(value);
    return {
      ok: false,
      error: type
        ? { code: 'unsupported_session_type', message: 'Only realtime sessions are supported.', param: 'session.type' }
        : { code: 'invalid_session', message: 'session must be an object.', param: 'session' },
    };
  }
  const session = parsed.data;
  if (session.type !== undefined && session.type !== 'realtime')
    return {
      ok: false,
      error: {
        code: 'unsupported_session_type',
        message: 'Only realtime sessions are supported.',
        param: 'session.type',
      },
    };
  const change: SessionChange = { kept: {} };
  if (session.instructions !== undefined) {
    if (typeof session.instructions !== 'string' || utf8Bytes(session.instructions) > MAX_TEXT_BYTES)
      return {
        ok: false,
        error: {
          code: 'invalid_session',
          message: 'instructions must be a string of at most 64 KiB.',
          param: 'session.instructions',
        },
      };
    change.instructions = session.instructions;
  }
  if (session.tools !== undefined) {
    const tools = parseSessionTools(session.tools, { ignoreUnknownKeys: true, onlyFunctions: true });
    if (!tools.ok)
      return { ok: false, error: { code: 'invalid_session', message: tools.error, param: 'session.tools' } };
    change.tools = tools.value;
  }
  if (session.tool_choice !== undefined) {
    const choice = parseToolChoice(session.tool_choice, change.tools ?? currentTools);
    if (!choice.ok)
      return {
        ok: false,
        error: { code: 'unsupported_tool_choice', message: choice.error, param: 'session.tool_choice' },
      };
    change.toolChoice = choice.value;
  }
  for (const [key, field] of Object.entries(session)) {
    if (DECIDED.has(key) || key === 'instructions' || key === 'tools' || key === 'tool_choice') continue;
    change.kept[key] = field;
  }
  return { ok: true, change };
}
