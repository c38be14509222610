import type { voiceToolKey } from '@conduit/contracts/dashboard/voice-tools';
import { z } from 'zod';
import type { StoreShape } from './store.js';

/**
 * One phone-data tool a voice mode may call through the host (the seed's voice reads). The route owns
 * everything the tools share — the envelope, the seal, the device's key, the rate limit — so a provider
 * only says what its tool is and reads its own data for one device. Health is one entry; location and
 * the phone's tools plug in the same way.
 */
export interface VoiceToolProvider {
  /** The Hermes tool's name (`conduit_health`), bound into each call's associated data. */
  name: string;
  /** Whose key seals the calls: `health`, `location` or `phone`. */
  key: VoiceToolKey;
  /** The feature's HKDF and associated-data label (`conduit-health-v1`). */
  label: string;
  /** The feature's store, where the device's key and the host key for this label live. */
  shape: StoreShape;
  /** Hermes' description and parameters of the tool, minus `device` and `_conduit_context`. */
  describe(): VoiceToolDescription;
  /**
   * Whether the device shares this tool's data (the route has already checked it holds a current key).
   * Listing only: a call is answered whenever its seal opens, with what the read handler says.
   */
  available(home: string, deviceId: string): boolean | Promise<boolean>;
  /** Reads for `deviceId` only, whatever the arguments say; a refusal is the 400's detail. */
  read(
    home: string,
    deviceId: string,
    args: Record<string, unknown>,
    context: VoiceReadContext,
  ): VoiceReadOutcome | Promise<VoiceReadOutcome>;
}

export type VoiceToolKey = z.output<typeof voiceToolKey>;

export interface VoiceToolDescription {
  description: string;
  /** JSON Schema (draft-07) of the arguments, as MCP lists the tool's input. */
  parameters: Record<string, unknown>;
}

export interface VoiceReadContext {
  /** The voice mode's provider as the phone sealed it (`gemini-live`). */
  provider: string;
  /** Who read, for the feature's reads log (`Gemini Live call`). */
  via: string;
  callId: string;
  /** Whole Unix seconds, from the service's clock. */
  nowS: number;
}

/** What the tool answered (sealed back to the device as `result`), or why the call is refused (400). */
export type VoiceReadOutcome = { result: unknown } | { refused: string };

/** The voice modes Conduit drives, as the reads log names them (the seed: "Gemini Live call"). */
const VOICE_MODE_NAMES: Readonly<Record<string, string>> = {
  'gemini-live': 'Gemini Live call',
  'grok-live': 'Grok Live call',
  'gpt-live': 'GPT-Live call',
};

/**
 * The reads log's `via` for a provider. A provider this host does not know yet (a newer Conduit) is
 * still logged, under its own id: the device sealed it, so it is the phone's word, kept to a safe charset.
 */
export function voiceModeName(provider: string): string {
  return VOICE_MODE_NAMES[provider] ?? `${provider.replace(/[^A-Za-z0-9 ._-]/g, '').slice(0, 64) || 'Voice'} call`;
}

/**
 * A tool's MCP input shape as the JSON Schema a voice model is offered: what MCP lists (draft-07, the
 * input side), without the `$schema` marker. Leave `device` and `_conduit_context` out of the shape first.
 */
export function voiceParameters(shape: z.ZodRawShape): Record<string, unknown> {
  const { $schema: _marker, ...schema } = z.toJSONSchema(z.object(shape), { target: 'draft-07', io: 'input' });
  return schema;
}
