/**
 * Slash commands on Relay, as Hermes runs them on its other platforms (Telegram): the connector runs
 * the ones about the conversation itself (`/stop`, `/new`, `/reset`, `/status`); any other command
 * (`/model`, `/reasoning`, …) goes to Hermes as the turn's words, where Hermes' own command handling
 * takes it. `allow_admin_from` and `user_allowed_commands` decide who may run which (config.ts).
 */

/** The commands the connector answers itself. */
export const CONNECTOR_COMMANDS = ['stop', 'new', 'reset', 'status'] as const;
export type ConnectorCommand = (typeof CONNECTOR_COMMANDS)[number];

export interface SlashCommand {
  /** Lower case, without the slash. */
  name: string;
  args: string;
}

/** A leading mention (`@Hermes /stop` in a group) is not part of the command. */
const LEADING_MENTIONS = /^(?:@\S+\s+)+/;
const COMMAND = /^\/([A-Za-z][A-Za-z0-9_-]{0,31})(?:@\S+)?(?:\s+([\s\S]*))?$/;

/** The command a message is, or null when it is ordinary words. */
export function slashCommand(text: string): SlashCommand | null {
  const match = COMMAND.exec(text.trim().replace(LEADING_MENTIONS, ''));
  if (!match?.[1]) return null;
  return { name: match[1].toLowerCase(), args: (match[2] ?? '').trim() };
}

export function isConnectorCommand(name: string): name is ConnectorCommand {
  return (CONNECTOR_COMMANDS as readonly string[]).includes(name);
}

/**
 * Whether `senderId` may run `/name`. Approval answers (`/approve`, `/deny`) have their own rule
 * (approvals.ts) and are not commands here.
 */
export function mayRunCommand(
  name: string,
  senderId: string,
  rules: { admins: ReadonlySet<string>; userAllowed: ReadonlySet<string> },
): boolean {
  if (rules.admins.size === 0) return true;
  return rules.admins.has(senderId) || rules.userAllowed.has(name);
}

/** The Hermes session of a chat: `/new` moves the chat to a fresh one. */
export function chatSessionId(chatId: string, generation: number): string {
  return generation === 0 ? `relayapp:${chatId}` : `relayapp:${chatId}:${generation}`;
}

export const COMMAND_TEXT = {
  refused: (name: string) => `Only an admin can run /${name} here.`,
  stopping: 'Stopping the current turn.',
  nothingRunning: 'Nothing is running.',
  stopFailed: "Hermes didn't take the stop; the turn may still be running.",
  newSession: "Started a new conversation: Hermes won't see the earlier messages.",
} as const;
