import { CALL_SETUP_ERRORS } from '@conduit/contracts/voice/calls';
import { MAX_TEXT_BYTES } from '@conduit/contracts/voice/events';
import type { CallSession } from '../calls/realtime-call.js';
import { parseSessionTools, parseToolChoice } from '../session/session-tools.js';
import { SetupError } from './setup-error.js';

/**
 * The session of a call-setup request, checked in the contract's order: type, tools and tool_choice,
 * instructions. Only those keys are read at setup; others are ignored (session.update later is strict).
 */
export function setupSession(session: Record<string, unknown>): CallSession {
  if (session.type !== undefined && session.type !== 'realtime')
    throw new SetupError(400, CALL_SETUP_ERRORS.onlyRealtime);
  const tools = parseSessionTools(session.tools);
  if (!tools.ok) throw new SetupError(400, tools.error);
  const toolChoice = parseToolChoice(session.tool_choice, tools.value);
  if (!toolChoice.ok) throw new SetupError(400, toolChoice.error);
  const instructions = session.instructions ?? '';
  if (typeof instructions !== 'string' || Buffer.byteLength(instructions, 'utf8') > MAX_TEXT_BYTES)
    throw new SetupError(400, CALL_SETUP_ERRORS.badInstructions);
  return { instructions, tools: tools.value, toolChoice: toolChoice.value };
}
