import { calendarReadArgs, PHONE_LABEL, phoneReadArgs } from '@conduit/contracts/dashboard/phone';
import type { z } from 'zod';
import {
  CALENDAR_TOOL,
  CALENDAR_TOOL_DESCRIPTION,
  calendarToolInput,
  PHONE_SHAPE,
  PHONE_TOOL,
  PHONE_TOOL_DESCRIPTION,
  phoneShares,
  phoneToolInput,
  readCalendar,
  readPhone,
  sharesCalendar,
  sharesStatus,
  type PhoneReadContext,
  type PhoneReadResult,
} from '../phone/index.js';
import { voiceParameters, type VoiceReadOutcome, type VoiceToolProvider } from './voice-tool-provider.js';

/**
 * conduit_calendar (read actions) and conduit_phone (status) as voice reads with the phone's key (the
 * seed: "join the list with key: "phone""), the same read handlers as the MCP tools with the device
 * fixed to the one whose key sealed the call. The seed's envelope for these is the phone feature's
 * sealed exchange with `op: "voice"` ({v, device_id, kid, call_id, op, nonce, ct}, the tool inside the
 * seal); this host answers the same sealed call on POST /voice-tools/call, whose envelope carries the
 * same fields with `tool` in the clear instead of `op` (bound by the associated data either way), and
 * the same plaintexts ({call_id, tool, args, provider} in, {call_id, result} out). POST /phone/exchange
 * arrives with the pending-changes slice and will route `op: "voice"` here.
 */

/**
 * One phone tool as a voice read: the MCP tool's description and parameters minus `device`, its
 * arguments checked strictly (a model naming a device is told so), read for the sealing device only.
 */
function voiceProvider(spec: {
  name: string;
  description: string;
  input: z.ZodRawShape;
  args: z.ZodObject;
  shares: Parameters<typeof phoneShares>[1];
  read: (home: string, args: unknown, context: PhoneReadContext) => PhoneReadResult;
}): VoiceToolProvider {
  const { device: _device, _conduit_context: _context, ...voiceInput } = spec.input;
  const voiceArgs = spec.args.omit({ device: true }).strict();
  const description = { description: spec.description, parameters: voiceParameters(voiceInput) };
  return {
    name: spec.name,
    key: 'phone',
    label: PHONE_LABEL,
    shape: PHONE_SHAPE,
    describe: () => description,
    available: (home, deviceId) => phoneShares(home, spec.shares, deviceId),
    read(home, deviceId, rawArgs, context): VoiceReadOutcome {
      const parsed = voiceArgs.safeParse(rawArgs);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        if (issue?.code === 'unrecognized_keys') {
          return { refused: `${String(issue.keys[0])} is not an argument of a ${spec.name} voice read` };
        }
        const field = issue?.path[0];
        return { refused: `${typeof field === 'string' ? field : 'arguments'} is missing or invalid` };
      }
      return { result: spec.read(home, parsed.data, { nowS: context.nowS, via: context.via, onlyDevice: deviceId }) };
    },
  };
}

export const calendarVoiceTool = voiceProvider({
  name: CALENDAR_TOOL,
  description: CALENDAR_TOOL_DESCRIPTION,
  input: calendarToolInput,
  args: calendarReadArgs,
  shares: sharesCalendar,
  read: readCalendar,
});

export const phoneVoiceTool = voiceProvider({
  name: PHONE_TOOL,
  description: PHONE_TOOL_DESCRIPTION,
  input: phoneToolInput,
  args: phoneReadArgs,
  shares: sharesStatus,
  read: readPhone,
});
