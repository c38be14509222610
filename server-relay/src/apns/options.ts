import { readFileSync } from 'node:fs';
import type { ApnsOptions, ApnsSeamMode } from './types.js';

export const PRODUCTION_APNS_ORIGIN = 'https://api.push.apple.com';

/** A bad APNS_* value; the message names the variable and never echoes key material. */
export class ApnsConfigError extends Error {}

const SEAM_MODES: readonly ApnsSeamMode[] = ['accept', 'reject', 'throw'];

/**
 * Reads the APNS_* environment. The provider key is read and checked here so a relay with a bad key
 * fails at boot; it is required unless a seam (APNS_MODE or APNS_CAPTURE_PATH) answers locally,
 * which is how operators and client developers run a relay without Apple credentials.
 */
export function apnsOptionsFromEnv(env: NodeJS.ProcessEnv): ApnsOptions {
  const topic = value(env, 'APNS_TOPIC');
  if (!topic) throw new ApnsConfigError('APNS_TOPIC is required.');

  const modeText = value(env, 'APNS_MODE');
  let mode: ApnsSeamMode | undefined;
  if (modeText !== undefined) {
    mode = SEAM_MODES.find((m) => m === modeText);
    if (!mode) throw new ApnsConfigError('APNS_MODE must be accept, reject or throw.');
  }

  const options: ApnsOptions = { topic };
  if (mode) options.mode = mode;
  const capturePath = value(env, 'APNS_CAPTURE_PATH');
  if (capturePath) options.capturePath = capturePath;
  const voipFailure = value(env, 'APNS_VOIP_FAILURE');
  if (voipFailure) options.voipFailure = voipFailure;
  const voipFailureTopic = value(env, 'APNS_VOIP_FAILURE_TOPIC');
  if (voipFailureTopic) options.voipFailureTopic = voipFailureTopic;

  const origin = value(env, 'APNS_ORIGIN') ?? PRODUCTION_APNS_ORIGIN;
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    throw new ApnsConfigError('APNS_ORIGIN must be an https:// URL.');
  }
  if (parsed.protocol !== 'https:') throw new ApnsConfigError('APNS_ORIGIN must be an https:// URL.');

  const keyPath = value(env, 'APNS_KEY_PATH');
  const keyId = value(env, 'APNS_KEY_ID');
  const teamId = value(env, 'APNS_TEAM_ID');
  const local = mode !== undefined || capturePath !== undefined;
  if (!keyPath || !keyId || !teamId) {
    if (local) return options;
    const missing = !keyPath ? 'APNS_KEY_PATH' : !keyId ? 'APNS_KEY_ID' : 'APNS_TEAM_ID';
    throw new ApnsConfigError(`${missing} is required.`);
  }
  let keyPem: string;
  try {
    keyPem = readFileSync(keyPath, 'utf8');
  } catch {
    throw new ApnsConfigError('APNS_KEY_PATH could not be read.');
  }
  options.provider = { keyPem, keyId, teamId, origin: parsed.origin };
  return options;
}

function value(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const text = env[name]?.trim();
  return text ? text : undefined;
}
