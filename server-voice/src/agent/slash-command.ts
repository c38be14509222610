/**
 * Native Hermes slash commands (`/reasoning low`, `/model …`) said or typed on a call. They go to Hermes as
 * commands, never as chat text (agent-backend.ts `runCommand`), so these rules decide what counts as one.
 */
export interface SlashCommand {
  /** Lower case, without the slash (`reasoning`). */
  name: string;
  /** The rest, as given (`low`). */
  args: string;
  /** What Hermes runs: `/name args`. */
  text: string;
}

/** `/name` then nothing or whitespace: `/usr/bin is where?` is a path, not the command `usr`. */
const TYPED = /^\/([A-Za-z][A-Za-z0-9_-]{0,63})(?:\s+([\s\S]*))?$/;

/**
 * The Hermes commands a caller may say. Speech is matched only against this list, so "slash the budget"
 * stays a sentence; typed input may name any command and Hermes decides.
 */
export const SPOKEN_COMMANDS: ReadonlySet<string> = new Set([
  'approve',
  'background',
  'commands',
  'compress',
  'deny',
  'fast',
  'goal',
  'help',
  'insights',
  'model',
  'new',
  'personality',
  'plan',
  'profile',
  'provider',
  'queue',
  'reasoning',
  'reset',
  'retry',
  'skills',
  'status',
  'steer',
  'stop',
  'title',
  'undo',
  'usage',
  'verbose',
  'yolo',
]);

/**
 * "Slash reasoning low." → `/reasoning low`: the transcript starts with the word "slash" (a comma or colon
 * after it is allowed) followed at once by a command of `SPOKEN_COMMANDS`. A transcript that already reads
 * `/reasoning low` is taken as typed. Trailing sentence punctuation, which transcribers add, is dropped.
 */
const SPOKEN = /^slash[,:]?\s+([A-Za-z][A-Za-z0-9_-]*)(?:[,:]?\s+([\s\S]*))?$/i;

function command(name: string, args: string): SlashCommand {
  const lower = name.toLowerCase();
  const rest = args.trim();
  return { name: lower, args: rest, text: rest ? `/${lower} ${rest}` : `/${lower}` };
}

/** The command typed text is (a user message starting with `/name`), or null for ordinary text. */
export function typedCommand(text: string): SlashCommand | null {
  const match = TYPED.exec(text.trim());
  return match?.[1] ? command(match[1], match[2] ?? '') : null;
}

/** The command a transcript is, or null: only the conservative spoken form above is one. */
export function spokenCommand(transcript: string): SlashCommand | null {
  const said = transcript
    .trim()
    .replace(/[.!?。]+$/u, '')
    .trim();
  if (said.startsWith('/')) return typedCommand(said);
  const match = SPOKEN.exec(said);
  if (!match?.[1] || !SPOKEN_COMMANDS.has(match[1].toLowerCase())) return null;
  return command(match[1], match[2] ?? '');
}
