import { calendarReadArgs, contactsReadArgs, PHONE_LABEL, phoneReadArgs } from '@conduit/contracts/dashboard/phone';
import type { z } from 'zod';
// The phone's modules themselves, not its index: the phone feature answers these same reads on its
// sealed exchange (op "voice") and imports this file, so going through its index would be a cycle.
import {
  phoneShares,
  readCalendar,
  readContacts,
  readPhone,
  sharesCalendar,
  sharesContacts,
  sharesPhone,
  type PhoneReadContext,
  type PhoneReadResult,
} from './phone-reads.js';
import { PHONE_SHAPE } from './phone-store.js';
import {
  CALENDAR_TOOL,
  CALENDAR_VOICE_DESCRIPTION,
  calendarToolInput,
  CONTACTS_TOOL,
  CONTACTS_TOOL_DESCRIPTION,
  contactsToolInput,
  PHONE_TOOL,
  PHONE_VOICE_DESCRIPTION,
  phoneToolInput,
} from './phone-tools.js';
import {
  voiceParameters,
  type VoiceReadOutcome,
  type VoiceToolProvider,
} from '../../kernel/phone-data/voice-tool-provider.js';

/**
 * conduit_calendar (read actions), conduit_phone (status and alarms) and conduit_contacts (people) as
 * voice reads with the phone's key (the seed: "join the list with key: "phone""), the same read
 * handlers as the MCP tools with the device fixed to the one whose key sealed the call, and no write
 * (adding or setting in a call is the phone's own tool). The seed's envelope for these is the phone
 * feature's sealed exchange with `op: "voice"` (POST /phone/exchange, which answers with these
 * providers); POST /voice-tools/call answers the same reads with `tool` in the clear instead of `op`
 * (bound by the associated data either way) and the same plaintexts.
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
  description: CALENDAR_VOICE_DESCRIPTION,
  input: calendarToolInput,
  args: calendarReadArgs,
  shares: sharesCalendar,
  read: readCalendar,
});

export const phoneVoiceTool = voiceProvider({
  name: PHONE_TOOL,
  description: PHONE_VOICE_DESCRIPTION,
  input: phoneToolInput,
  args: phoneReadArgs,
  shares: sharesPhone,
  read: readPhone,
});

export const contactsVoiceTool = voiceProvider({
  name: CONTACTS_TOOL,
  description: CONTACTS_TOOL_DESCRIPTION,
  input: contactsToolInput,
  args: contactsReadArgs,
  shares: sharesContacts,
  read: readContacts,
});

/** The phone's voice reads, in the order they are listed; POST /phone/exchange answers these. */
export const PHONE_VOICE_TOOLS = [calendarVoiceTool, phoneVoiceTool, contactsVoiceTool] as const;
