import type { SessionTool, ToolChoice } from '@conduit/contracts/voice/events';
import type { SlashCommand } from './slash-command.js';

/** One user turn handed to the agent. */
export interface AgentTurn {
  /** One conversation per call: the backend keeps its history or remote session under this key. */
  sessionKey: string;
  /** What the user said or typed. */
  text: string;
  /** The session instructions (per-turn system prompt). */
  instructions: string;
  /** The client function tools the agent may call this turn (already narrowed by `tool_choice`). */
  tools: readonly SessionTool[];
  toolChoice: ToolChoice;
  /** Aborted on cancel, barge-in and hang-up: the backend stops reading and cancels upstream work. */
  signal: AbortSignal;
  /** Runs a client function tool; resolves with its output string (the client answered). */
  callTool: (name: string, args: string) => Promise<string>;
  /** Images attached to this user message (Conference camera frames), for backends that take them. */
  images?: readonly TurnImage[];
}

/** An image attached to a user turn. */
export interface TurnImage {
  mimeType: 'image/jpeg';
  data: Buffer;
}

/** A native Hermes slash command to run in the call's conversation (slash-command.ts). */
export interface CommandTurn {
  sessionKey: string;
  command: SlashCommand;
  /** Aborted on cancel, barge-in, hang-up and the reply completion timeout. */
  signal: AbortSignal;
}

/** Streamed reply text: `delta` appends; `snapshot` replaces the reply so far (text revised at a tool boundary). */
export type AgentEvent = { type: 'delta'; text: string } | { type: 'snapshot'; text: string };

/** The agent that answers turns: Hermes' API server, an OpenAI-compatible chat endpoint, the echo agent, or a script. */
export interface AgentBackend {
  /** Short label for logs and the session (`hermes`, `openai:gpt-4o-mini`, `echo`). Never a credential. */
  readonly label: string;
  /** Streams the reply; the generator's return value is the final text. Rejects with `AgentError` on failure. */
  respond(turn: AgentTurn): AsyncGenerator<AgentEvent, string, void>;
  /**
   * Runs a native Hermes slash command where Hermes executes commands, and resolves with Hermes' answer.
   * Only Hermes has commands: a backend without this refuses them (an error event), never sends them as
   * chat text. Rejects with `CommandError` when Hermes refused the command or could not run it.
   */
  runCommand?(turn: CommandTurn): Promise<string>;
  /** The call ended: forget its conversation. */
  endSession(sessionKey: string): void;
}

export class AgentError extends Error {
  override readonly name = 'AgentError';
  constructor(
    message: string,
    readonly status?: number,
    /**
     * When set, the caller is told why (an `error` event with this code and message) instead of a bare failed
     * response: for a failure the user can fix, such as a Hermes setting. Never holds a URL or a key.
     */
    readonly callerError?: { code: string; message: string },
  ) {
    super(message);
  }
}

/** A command that did not run; `message` says why and is safe to show the caller (no URL, no key). */
export class CommandError extends Error {
  override readonly name = 'CommandError';
  constructor(
    readonly code: 'command_unavailable' | 'command_failed',
    message: string,
  ) {
    super(message);
  }
}
