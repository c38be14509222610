import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  PRESENT_FEATURE,
  PRESENT_STATES,
  presentMaps,
  type PresentMaps,
  type PresentPrompt,
  type PresentResult,
} from '@conduit/contracts/dashboard/present';
import { LockedJsonStore } from '../../state/json-state-file.js';

/**
 * A profile's confirm prompts, `<home>/conduit-present.json` (mode 0600, written whole to a temporary
 * file and renamed). The tool, the exchange route and any feature that creates prompts (navigate)
 * change it under one lock file, so the first answer to a prompt wins however the writers interleave.
 * Times are Unix seconds.
 */
export const PRESENT_FILE = 'conduit-present.json';

/** The bounds of the store, each with why it is what it is. */
export const PRESENT_STORE_LIMITS = {
  /** The seed: 20 prompts an hour per profile, so a looping model cannot flood the phone. */
  promptsPerHour: 20,
  /** The seed: 20 waiting at once; a panel queue longer than that is not read. */
  waitingAtOnce: 20,
  /** The seed keeps answers a week, so a later turn (or a cron run) can still learn what the user said. */
  finishedKeptS: 7 * 24 * 3600,
  /**
   * Finished prompts kept at most, newest first: 20 an hour for a week could be thousands of previews,
   * and no one asks after the 200th-last answer.
   */
  finishedKept: 200,
  /** Conduits remembered (the last exchange of each installation), for the tool's visibility. */
  conduitsKept: 8,
} as const;

const promptShape = z.object({
  id: z.string(),
  title: z.string(),
  preview: z.string(),
  action_label: z.string(),
  spoken_yes: z.array(z.string()),
  session_id: z.string(),
  created_at: z.number(),
  expires_at: z.number(),
  maps: presentMaps.nullable().default(null),
  state: z.enum(PRESENT_STATES),
  /** When it left `waiting` (answered, expired or cancelled); null while waiting. */
  finished_at: z.number().nullable().default(null),
  via: z.enum(['tap', 'voice']).nullable().default(null),
  edit_text: z.string().nullable().default(null),
  /** Whether Hermes has been told the final state (a wait that ended with it, or status). */
  seen: z.boolean().default(false),
});
export type StoredPrompt = z.infer<typeof promptShape>;

const conduitShape = z.object({
  installation_id: z.string(),
  device: z.string(),
  app_version: z.string(),
  features: z.array(z.string()),
  exchanged_at: z.number(),
});
export type ConduitExchange = z.infer<typeof conduitShape>;

/** The file; fields this version does not know are kept as they are. */
const presentFileShape = z.looseObject({
  v: z.literal(1),
  prompts: z.array(promptShape).default([]),
  conduits: z.array(conduitShape).default([]),
});
export type PresentFile = z.infer<typeof presentFileShape>;

function emptyFile(): PresentFile {
  return { v: 1, prompts: [], conduits: [] };
}

/** A new prompt id: 24 lowercase hex digits (the nudge's event id `present:<id>` fits the relay's rule). */
export function newPromptId(): string {
  return randomBytes(12).toString('hex');
}

/**
 * Expiry and the sweep, applied to every read: a waiting prompt past its expiry becomes `expired`
 * (finished at its expiry, so it is kept a week from then), finished prompts older than a week go.
 * A full pass rather than stopping at the first live prompt: a clock step backwards can leave an
 * expired prompt behind a newer one. Returns the same object when nothing changed.
 */
export function settle(file: PresentFile, nowS: number): PresentFile {
  let changed = false;
  const prompts: StoredPrompt[] = [];
  for (const prompt of file.prompts) {
    if (prompt.state === 'waiting' && prompt.expires_at <= nowS) {
      prompts.push({ ...prompt, state: 'expired', finished_at: prompt.expires_at });
      changed = true;
    } else if (
      prompt.state !== 'waiting' &&
      (prompt.finished_at ?? prompt.created_at) <= nowS - PRESENT_STORE_LIMITS.finishedKeptS
    ) {
      changed = true;
    } else {
      prompts.push(prompt);
    }
  }
  const finished = prompts.filter((prompt) => prompt.state !== 'waiting');
  if (finished.length > PRESENT_STORE_LIMITS.finishedKept) {
    const dropped = new Set(
      [...finished]
        .sort((a, b) => (b.finished_at ?? 0) - (a.finished_at ?? 0))
        .slice(PRESENT_STORE_LIMITS.finishedKept)
        .map((prompt) => prompt.id),
    );
    return { ...file, prompts: prompts.filter((prompt) => !dropped.has(prompt.id)) };
  }
  return changed ? { ...file, prompts } : file;
}

/** What a feature asks the phone to confirm. Text is already within PRESENT_LIMITS. */
export interface PromptInput {
  title: string;
  /** Markdown. */
  preview: string;
  actionLabel: string;
  spokenYes: string[];
  /** The chat that asks; the phone opens it. */
  sessionId: string;
  ttlMinutes: number;
  maps?: PresentMaps;
}

export type CreateRefusal = { reason: 'hourly_limit' | 'waiting_limit'; message: string };

/** Adds a waiting prompt, or says which of the profile's limits refuses it. Pure. */
export function withNewPrompt(
  file: PresentFile,
  input: PromptInput,
  id: string,
  nowS: number,
): { file: PresentFile; result: { ok: true; prompt: StoredPrompt } | ({ ok: false } & CreateRefusal) } {
  const createdAt = Math.floor(nowS);
  const lastHour = file.prompts.filter((prompt) => prompt.created_at > createdAt - 3600).length;
  if (lastHour >= PRESENT_STORE_LIMITS.promptsPerHour) {
    return {
      file,
      result: {
        ok: false,
        reason: 'hourly_limit',
        message: `This profile asked ${PRESENT_STORE_LIMITS.promptsPerHour} confirm prompts in the last hour, the most it may; ask in the chat instead, or try again later.`,
      },
    };
  }
  const waiting = file.prompts.filter((prompt) => prompt.state === 'waiting').length;
  if (waiting >= PRESENT_STORE_LIMITS.waitingAtOnce) {
    return {
      file,
      result: {
        ok: false,
        reason: 'waiting_limit',
        message: `${PRESENT_STORE_LIMITS.waitingAtOnce} confirm prompts are already waiting for the user; cancel one you no longer need (action cancel) before asking again.`,
      },
    };
  }
  const prompt: StoredPrompt = {
    id,
    title: input.title,
    preview: input.preview,
    action_label: input.actionLabel,
    spoken_yes: input.spokenYes,
    session_id: input.sessionId,
    created_at: createdAt,
    expires_at: createdAt + input.ttlMinutes * 60,
    maps: input.maps ?? null,
    state: 'waiting',
    finished_at: null,
    via: null,
    edit_text: null,
    seen: false,
  };
  return { file: { ...file, prompts: [...file.prompts, prompt] }, result: { ok: true, prompt } };
}

/**
 * The phone's answers: the first answer to a waiting prompt wins; an answer for an unknown prompt or
 * one that already finished (answered, expired, cancelled) is ignored. Returns the ids it settled.
 */
export function withResults(
  file: PresentFile,
  results: readonly PresentResult[],
  nowS: number,
): { file: PresentFile; settled: string[] } {
  if (results.length === 0) return { file, settled: [] };
  const settled: string[] = [];
  const prompts = file.prompts.map((prompt) => {
    if (prompt.state !== 'waiting') return prompt;
    const answer = results.find((result) => result.id === prompt.id);
    if (!answer) return prompt;
    settled.push(prompt.id);
    return {
      ...prompt,
      state: answer.outcome,
      finished_at: Math.floor(nowS),
      via: answer.via,
      edit_text: answer.outcome === 'edit' ? (answer.edit_text ?? '').trim() : null,
      seen: false,
    } satisfies StoredPrompt;
  });
  return settled.length === 0 ? { file, settled } : { file: { ...file, prompts }, settled };
}

/** Records the exchanging Conduit (the latest exchange of each installation, newest first). */
export function withConduit(file: PresentFile, conduit: ConduitExchange): PresentFile {
  const others = file.conduits.filter((known) => known.installation_id !== conduit.installation_id);
  return { ...file, conduits: [conduit, ...others].slice(0, PRESENT_STORE_LIMITS.conduitsKept) };
}

/** Marks prompts whose final state Hermes has now been told. */
export function withSeen(file: PresentFile, ids: readonly string[]): PresentFile {
  const told = new Set(ids);
  if (!file.prompts.some((prompt) => told.has(prompt.id) && prompt.state !== 'waiting' && !prompt.seen)) return file;
  return {
    ...file,
    prompts: file.prompts.map((prompt) =>
      told.has(prompt.id) && prompt.state !== 'waiting' ? { ...prompt, seen: true } : prompt,
    ),
  };
}

/** Takes back a waiting prompt; a finished one keeps its state. */
export function withCancelled(file: PresentFile, id: string, nowS: number): PresentFile {
  const prompt = file.prompts.find((candidate) => candidate.id === id);
  if (!prompt || prompt.state !== 'waiting') return file;
  return {
    ...file,
    prompts: file.prompts.map((candidate) =>
      candidate.id === id
        ? { ...candidate, state: 'cancelled' as const, finished_at: Math.floor(nowS), seen: true }
        : candidate,
    ),
  };
}

/** The waiting prompts as the phone gets them, oldest first. */
export function waitingForPhone(file: PresentFile): PresentPrompt[] {
  return file.prompts
    .filter((prompt) => prompt.state === 'waiting')
    .sort((a, b) => a.created_at - b.created_at)
    .map((prompt) => ({
      id: prompt.id,
      title: prompt.title,
      preview: prompt.preview,
      action_label: prompt.action_label,
      spoken_yes: prompt.spoken_yes,
      session_id: prompt.session_id,
      created_at: prompt.created_at,
      expires_at: prompt.expires_at,
      ...(prompt.maps ? { maps: prompt.maps } : {}),
    }));
}

/** Whether a Conduit that shows confirm prompts (`present-v1`) has exchanged with this profile. */
export function presentOffered(file: PresentFile): boolean {
  return file.conduits.some((conduit) => conduit.features.includes(PRESENT_FEATURE));
}

/** Whether the profile's most recent exchange advertised `feature` (e.g. `maps-navigate`). */
export function lastExchangeAdvertised(file: PresentFile, feature: string): boolean {
  const latest = [...file.conduits].sort((a, b) => b.exchanged_at - a.exchanged_at)[0];
  return latest?.features.includes(feature) ?? false;
}

/** One profile's conduit-present.json, read and changed as LockedJsonStore says. */
export class PresentStore extends LockedJsonStore<PresentFile> {
  constructor(home: string) {
    super(home, PRESENT_FILE, presentFileShape, emptyFile, settle);
  }
}
