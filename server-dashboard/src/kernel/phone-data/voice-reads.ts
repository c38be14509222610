import { randomBytes } from 'node:crypto';
import { sealedVoiceCall, voiceCallPlaintext } from '@conduit/contracts/dashboard/phone-data';
import type { z } from 'zod';
import { decodeBase64Url, encodeBase64Url } from '../../crypto/base64url.js';
import { deviceKeys, openWith, sealWith, voiceAad, type DeviceKeys } from './sealing.js';
import type { PhoneDataStore } from './store.js';

/**
 * A voice mode's sealed read (the seed: "Sealed both ways with the device's own key, with its own HKDF
 * directions and associated data binding the tool, key, device and call id"). Opening answers which
 * device asked, matched by its id and current key, so another device or a newly registered key reads
 * nothing; the caller runs the feature's read handler for that device only and seals the result back.
 */

export type SealedVoiceCall = z.output<typeof sealedVoiceCall>;

export interface OpenedVoiceCall {
  deviceId: string;
  kid: string;
  callId: string;
  tool: string;
  args: Record<string, unknown>;
  provider: string;
  keys: DeviceKeys;
}

/** Why a voice call was refused; the route answers each as a 4xx. */
export type VoiceCallRefusal = 'invalid' | 'unknown_key' | 'does_not_open';

export function openVoiceCall(
  store: PhoneDataStore,
  label: string,
  raw: unknown,
  nowS: number,
): OpenedVoiceCall | VoiceCallRefusal {
  const parsed = sealedVoiceCall.safeParse(raw);
  if (!parsed.success) return 'invalid';
  const call = parsed.data;
  const nonce = decodeBase64Url(call.nonce);
  const sealed = decodeBase64Url(call.ct);
  if (nonce?.length !== 12 || sealed === null) return 'invalid';
  const device = store.device(call.device_id);
  if (!device || device.kid !== call.kid) return 'unknown_key';
  const host = store.hostKey(nowS);
  const keys = deviceKeys(label, host.secret, host.public, new Uint8Array(device.device_key));
  const aad = voiceAad(label, call.tool, call.kid, call.device_id, call.call_id);
  const plain = keys && openWith(keys.keys['voice device-to-host'], nonce, aad, sealed);
  if (!keys || !plain) return 'does_not_open';
  let inner: unknown;
  try {
    inner = JSON.parse(Buffer.from(plain).toString('utf8'));
  } catch {
    return 'invalid';
  }
  const body = voiceCallPlaintext.safeParse(inner);
  // The sealed ids must be the ones the associated data bound.
  if (!body.success || body.data.call_id !== call.call_id || body.data.tool !== call.tool) return 'invalid';
  return {
    deviceId: call.device_id,
    kid: call.kid,
    callId: call.call_id,
    tool: call.tool,
    args: body.data.args,
    provider: body.data.provider,
    keys,
  };
}

/** The answer to an opened call, sealed for that device only: `{call_id, result}` inside. */
export function sealVoiceAnswer(
  label: string,
  call: OpenedVoiceCall,
  result: unknown,
  nonce: Uint8Array = randomBytes(12),
): SealedVoiceCall {
  const aad = voiceAad(label, call.tool, call.kid, call.deviceId, call.callId);
  const plain = new TextEncoder().encode(JSON.stringify({ call_id: call.callId, result }));
  const ct = sealWith(call.keys.keys['voice host-to-device'], nonce, aad, plain);
  return {
    v: 1,
    device_id: call.deviceId,
    kid: call.kid,
    call_id: call.callId,
    tool: call.tool,
    nonce: encodeBase64Url(nonce),
    ct: encodeBase64Url(ct),
  };
}
