import { z } from 'zod';
import { chatsSearchable, readChat, searchChats, type ChatMatch } from '../../kernel/hermes-chats.js';
import { StateDbUnreadable } from '../../kernel/hermes-state-db.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { answerOfFailure, refusal, type WatchAnswer, type WatchArgs } from './watch-answer.js';
import { WATCH_LIMITS } from './watch-limits.js';

export const WATCH_CHAT_TOOLS = ['find_chat', 'read_chat'] as const;
export type WatchChatTool = (typeof WATCH_CHAT_TOOLS)[number];

export function isChatTool(tool: string): tool is WatchChatTool {
  return (WATCH_CHAT_TOOLS as readonly string[]).includes(tool);
}

/** The grant as its chats see it. */
export interface ChatGrant {
  readonly id: string;
  readonly profile: ProfileScope;
}

const findArgs = z.object({
  query: z
    .string()
    .transform((text) => text.replace(/\s+/g, ' ').trim())
    .pipe(z.string().min(1).max(WATCH_LIMITS.chatQueryChars)),
});
const readArgs = z.object({ number: z.int().min(1) });

/** Text from the store put on one line of a fenced list: no line breaks, no backticks to close the fence. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').replaceAll('`', "'").trim();
}

function dayOf(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 10);
}

function nameOf(chat: ChatMatch): string {
  if (chat.title) return oneLine(chat.title);
  return chat.opening ? `Untitled, beginning "${oneLine(chat.opening)}"` : 'Untitled';
}

/** The numbered matches as fenced text, so the voice model reads the chats' words as data, not instructions. */
function numberedList(chats: readonly ChatMatch[]): string {
  if (chats.length === 0) return '';
  const lines = chats.map((chat, index) => `${index + 1}. ${nameOf(chat)} (last active ${dayOf(chat.lastActiveAtS)})`);
  return ['```', ...lines, '```'].join('\n');
}

/** The UTF-8 size a text takes inside the sealed JSON answer (escapes included). */
function answerBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text), 'utf8');
}

/** Cuts a text to `bytes` of answer, at a character boundary, marking the cut. */
function clipTo(text: string, bytes: number): string {
  if (answerBytes(text) <= bytes) return text;
  const chars = [...text];
  let low = 0;
  let high = chars.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (answerBytes(`${chars.slice(0, mid).join('')}…`) <= bytes) low = mid;
    else high = mid - 1;
  }
  return `${chars.slice(0, low).join('')}…`;
}

const speaker = (role: 'user' | 'assistant') => (role === 'user' ? 'User' : 'Hermes');

/**
 * A chat's text for the voice model: word for word when it fits; else the stored summary of its start
 * (a saved voice call's) and then the newest turns that fit, each older part said to be left out.
 */
function chatText(
  messages: readonly { role: 'user' | 'assistant'; text: string; index: number }[],
  summary: { text: string; covers: number } | null,
): string {
  const lineOf = (message: { role: 'user' | 'assistant'; text: string }) => `${speaker(message.role)}: ${message.text}`;
  const whole = messages.map(lineOf).join('\n\n');
  const limit = WATCH_LIMITS.chatAnswerBytes;
  if (answerBytes(whole) <= limit) return whole;
  // The summary takes at most half: the latest turns are what a caller most often asks about.
  const head = summary ? `Summary of the earlier part:\n${clipTo(summary.text, limit / 2)}` : '';
  const covered = summary?.covers ?? 0;
  const compose = (kept: readonly string[]): string => {
    const shownFrom = messages[messages.length - kept.length]?.index ?? Number.POSITIVE_INFINITY;
    const skipped = Math.min(shownFrom, (messages.at(-1)?.index ?? 0) + 1) - covered;
    const noun = skipped === 1 ? 'message' : 'messages';
    const gap =
      skipped <= 0
        ? ''
        : summary
          ? `(${skipped} ${noun} after the summary not shown.)`
          : `(The first ${skipped} ${noun} not shown.)`;
    return [head, gap, ...(kept.length > 0 ? ['Latest:', ...kept] : [])].filter((part) => part !== '').join('\n\n');
  };
  // Newest first, stopping at the first turn that does not fit, so the kept turns stay one run; the
  // count is rechecked on the composed text, whose gap line grows with what is left out.
  const kept: string[] = [];
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const message = messages[i];
    if (!message || message.index < covered) break;
    const candidate = [lineOf(message), ...kept];
    if (answerBytes(compose(candidate)) <= limit) {
      kept.unshift(lineOf(message));
      continue;
    }
    // A newest turn too long on its own is clipped rather than left out: it is what was said last.
    if (kept.length === 0) {
      const room = limit - answerBytes(compose([''])) - 4; // the separator, escaped
      kept.unshift(clipTo(lineOf(message), room));
    }
    break;
  }
  return compose(kept);
}

function storeFailure(tool: WatchChatTool, error: unknown): WatchAnswer {
  if (error instanceof StateDbUnreadable) {
    return error.busy
      ? refusal(503, "Hermes' chats are busy; try again shortly")
      : refusal(503, "Hermes' chats can't be read on this host");
  }
  return answerOfFailure(tool, error);
}

/**
 * Watch chats (the seed, Apple Watch calls: Chats): `find_chat` searches the grant's profile's Hermes
 * chats by title and words, newest first, and answers them numbered; `read_chat` reads one of the
 * grant's newest search by its number, bounded. Only the grant's own profile store is ever opened, and
 * only a chat its latest search returned can be read, so a number never reaches another chat.
 */
export class WatchChats {
  /** Per open grant, the chats its newest search returned, in their numbered order. */
  private readonly lastSearch = new Map<string, readonly ChatMatch[]>();

  /** Whether a grant may carry the chat tools: the profile's store is Hermes' own (or not made yet). */
  available(profile: ProfileScope): boolean {
    return chatsSearchable(profile.home);
  }

  run(grant: ChatGrant, tool: WatchChatTool, args: WatchArgs): WatchAnswer {
    try {
      return tool === 'find_chat' ? this.find(grant, args) : this.read(grant, args);
    } catch (error) {
      return storeFailure(tool, error);
    }
  }

  released(grant: ChatGrant): void {
    this.lastSearch.delete(grant.id);
  }

  private find(grant: ChatGrant, args: WatchArgs): WatchAnswer {
    const parsed = findArgs.safeParse(args);
    if (!parsed.success) {
      return refusal(400, `find_chat needs a query of 1 to ${WATCH_LIMITS.chatQueryChars} characters`);
    }
    const chats = searchChats(grant.profile.home, parsed.data.query, {
      maxChats: WATCH_LIMITS.chatsPerSearch,
      maxWords: WATCH_LIMITS.chatSearchWords,
      minWordChars: WATCH_LIMITS.chatSearchWordMinChars,
      openingChars: WATCH_LIMITS.chatOpeningChars,
    });
    if (chats === null) return refusal(501, "This host can't search Hermes' chats");
    this.lastSearch.set(grant.id, chats);
    return { ok: true, count: chats.length, chats: numberedList(chats) };
  }

  private read(grant: ChatGrant, args: WatchArgs): WatchAnswer {
    const parsed = readArgs.safeParse(args);
    if (!parsed.success) return refusal(400, 'read_chat needs the number of a chat find_chat answered');
    const chat = this.lastSearch.get(grant.id)?.[parsed.data.number - 1];
    if (!chat) return { ok: true, unknown: true };
    const transcript = readChat(grant.profile.home, chat.id, {
      maxRows: WATCH_LIMITS.chatRowsRead,
      messageChars: WATCH_LIMITS.chatMessageChars,
    });
    // Deleted since the search: as unknown as a number the search never gave.
    if (!transcript) return { ok: true, unknown: true };
    const title = transcript.title ? oneLine(transcript.title) : nameOf(chat);
    if (transcript.messages.length === 0) return { ok: true, chat: '', title };
    return { ok: true, chat: chatText(transcript.messages, transcript.summary), title };
  }
}
