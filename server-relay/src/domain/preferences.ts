import { isPlainObject } from './text.js';

/** The notification preferences an installation stores; non-boolean values fall back to the default. */
export const PREFERENCE_DEFAULTS = {
  enabled: true,
  approval_needed: true,
  input_needed: true,
  response_ready: true,
  turn_failed: true,
  background_task_finished: true,
  call_requested: true,
  completion_sound: true,
  attention_sound: true,
  show_previews: false,
  decision_cards: true,
} as const;

export type Preferences = { -readonly [K in keyof typeof PREFERENCE_DEFAULTS]: boolean };

export function normalizePreferences(value: unknown): Preferences {
  const source = isPlainObject(value) ? value : {};
  const out = { ...PREFERENCE_DEFAULTS } as Preferences;
  for (const key of Object.keys(PREFERENCE_DEFAULTS) as (keyof Preferences)[]) {
    const candidate = source[key];
    if (typeof candidate === 'boolean') out[key] = candidate;
  }
  return out;
}

/** New preferences merged over the stored ones, then normalised (a non-object update keeps them). */
export function mergePreferences(stored: Preferences, update: unknown): Preferences {
  return normalizePreferences(isPlainObject(update) ? { ...stored, ...update } : stored);
}

/** The delivery gate: enabled, and the type's own switch (`approval.needed` → `approval_needed`) not off. */
export function deliversType(preferences: Preferences, type: string): boolean {
  const key = type.replace('.', '_');
  return preferences.enabled && (preferences as Record<string, boolean>)[key] !== false;
}
