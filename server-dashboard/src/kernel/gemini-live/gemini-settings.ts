import type { ProfileFiles } from '../profile-files.js';

/** The model a token is locked to when CONDUIT_GEMINI_LIVE_MODEL is not set (ROUTES.md). */
export const DEFAULT_GEMINI_LIVE_MODEL = 'gemini-3.8-live';

/** Ephemeral tokens exist only on v1alpha today; the variable may name a later version once Google moves them. */
const API_VERSIONS = ['v1alpha', 'v1beta', 'v1'] as const;
export type GeminiApiVersion = (typeof API_VERSIONS)[number];

export interface GeminiLiveSettings {
  /** GEMINI_API_KEY, else GOOGLE_API_KEY (the key Hermes' Gemini TTS uses). Never answered or logged. */
  apiKey: string | undefined;
  model: string;
  apiVersion: GeminiApiVersion;
}

/** Reads the profile's Gemini Live settings from its environment (ROUTES.md, Gemini Live). */
export function geminiLiveSettings(files: ProfileFiles): GeminiLiveSettings {
  const configured = files
    .env('CONDUIT_GEMINI_LIVE_MODEL')
    ?.replace(/^models\//, '')
    .trim();
  const version = files.env('CONDUIT_GEMINI_LIVE_API_VERSION');
  return {
    apiKey: files.env('GEMINI_API_KEY') ?? files.env('GOOGLE_API_KEY'),
    model: configured || DEFAULT_GEMINI_LIVE_MODEL,
    // Any other value is the default, as the reference treats it.
    apiVersion: API_VERSIONS.find((allowed) => allowed === version) ?? 'v1alpha',
  };
}
