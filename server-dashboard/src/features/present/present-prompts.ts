import type { PresentExchangeRequest, PresentPrompt } from '@conduit/contracts/dashboard/present';
import { announcePresentChange } from './present-signals.js';
import {
  lastExchangeAdvertised,
  newPromptId,
  PresentStore,
  waitingForPhone,
  withConduit,
  withNewPrompt,
  withResults,
  type CreateRefusal,
  type PromptInput,
  type StoredPrompt,
} from './present-store.js';

/**
 * The prompts of a profile as other parts of the host use them: the tool, the exchange route and a
 * feature that asks the user to OK something of its own (navigate, carrying `maps`). Every change goes
 * through PresentStore's lock and is announced, so a wait anywhere in this process wakes.
 */

export type CreatedPrompt = { ok: true; prompt: StoredPrompt } | ({ ok: false } & CreateRefusal);

/**
 * Keeps a waiting prompt for the profile at `home`, or refuses it past the profile's limits (20 an
 * hour, 20 waiting). Does not wake the phone: the caller sends the nudge (PresentNudge).
 */
export async function createPrompt(home: string, input: PromptInput, nowS: number): Promise<CreatedPrompt> {
  const id = newPromptId();
  return new PresentStore(home).update(nowS, (file) => withNewPrompt(file, input, id, nowS));
}

/** One prompt as it is now (expiry applied); null when unknown or swept. */
export async function readPrompt(home: string, id: string, nowS: number): Promise<StoredPrompt | null> {
  return (await new PresentStore(home).read(nowS)).prompts.find((prompt) => prompt.id === id) ?? null;
}

/** Whether the profile's most recent present exchange advertised `feature` (e.g. `maps-navigate`). */
export async function lastExchangeAdvertises(home: string, feature: string, nowS: number): Promise<boolean> {
  return lastExchangeAdvertised(await new PresentStore(home).read(nowS), feature);
}

/**
 * One exchange of a Conduit: its answers first (the first answer to a prompt wins), its features
 * remembered, and the prompts still waiting returned.
 */
export async function exchangePrompts(
  home: string,
  request: PresentExchangeRequest,
  nowS: number,
): Promise<{ prompts: PresentPrompt[]; settled: string[] }> {
  const store = new PresentStore(home);
  const outcome = await store.update(nowS, (file) => {
    const answered = withResults(file, request.results, nowS);
    const next = withConduit(answered.file, {
      installation_id: request.installation_id,
      device: request.device,
      app_version: request.app_version,
      features: [...new Set(request.features ?? [])],
      exchanged_at: Math.floor(nowS),
    });
    return { file: next, result: { prompts: waitingForPhone(next), settled: answered.settled } };
  });
  if (outcome.settled.length > 0) announcePresentChange(store.file);
  return outcome;
}

/** Tells waiters of the profile at `home` that its prompts changed (after a cancel). */
export function announceChange(home: string): void {
  announcePresentChange(new PresentStore(home).file);
}
