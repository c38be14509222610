import { HEALTH_LABEL, healthReadArgs } from '@conduit/contracts/dashboard/health';
import { HEALTH_SHAPE, readHealth, type HealthReadResult } from './health-reads.js';
import { HEALTH_TOOL, HEALTH_TOOL_DESCRIPTION, healthToolInput } from './health-tool.js';
import { PhoneDataStore } from '../../kernel/phone-data/store.js';
import {
  voiceParameters,
  type VoiceReadOutcome,
  type VoiceToolDescription,
  type VoiceToolProvider,
} from '../../kernel/phone-data/voice-tool-provider.js';

/**
 * conduit_health as a voice read (the seed: "Conduit offers the voice model conduit_health with
 * Hermes' own description and parameters (minus device …)"): the same read handler as the MCP tool,
 * with the device fixed to the one whose key sealed the call.
 */

// Left out of what a voice model is offered: the asking phone is the device, and no hook signs a voice call.
const { device: _device, _conduit_context: _context, ...voiceInput } = healthToolInput;

/**
 * The arguments a voice read takes: the tool's own minus `device`, strictly, so a model that names a
 * device (or anything else) is told so instead of having it silently ignored.
 */
const healthVoiceArgs = healthReadArgs.omit({ device: true }).strict();

/**
 * The overview lists every device of the profile (right for Hermes, who reads them all); a voice read
 * covers only the asking phone, so the other devices' ids and sync times are left out of its answer.
 */
function onlyTheDevice(result: HealthReadResult, deviceId: string): HealthReadResult {
  if (!result.ok || !Array.isArray(result.devices)) return result;
  const devices: unknown[] = result.devices;
  return { ...result, devices: devices.filter((row) => (row as { device_id?: unknown }).device_id === deviceId) };
}

const description: VoiceToolDescription = {
  description: HEALTH_TOOL_DESCRIPTION,
  parameters: voiceParameters(voiceInput),
};

export const healthVoiceTool: VoiceToolProvider = {
  name: HEALTH_TOOL,
  key: 'health',
  label: HEALTH_LABEL,
  shape: HEALTH_SHAPE,
  describe: () => description,
  /** Offered once this device has synced, as the MCP tool is once any device has. */
  available(home, deviceId) {
    const store = PhoneDataStore.open(home, HEALTH_SHAPE, false);
    try {
      return store !== null && store.batchCount(deviceId) > 0;
    } finally {
      store?.close();
    }
  },
  read(home, deviceId, rawArgs, context): VoiceReadOutcome {
    const parsed = healthVoiceArgs.safeParse(rawArgs);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.code === 'unrecognized_keys' ? issue.keys[0] : issue?.path[0];
      return {
        refused:
          issue?.code === 'unrecognized_keys'
            ? `${String(field)} is not an argument of a ${HEALTH_TOOL} voice read`
            : `${typeof field === 'string' ? field : 'arguments'} is missing or invalid`,
      };
    }
    const result = readHealth(home, parsed.data, { nowS: context.nowS, via: context.via, onlyDevice: deviceId });
    return { result: onlyTheDevice(result, deviceId) };
  },
};
