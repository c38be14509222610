import { readFileSync, statSync } from 'node:fs';
import type { SessionTool } from '@conduit/contracts/voice/events';
import type { Logger } from '../log.js';
import { profileConfigFromText } from '../profile-config.js';

/** The Hermes toolset that holds the room's remote tools (CONTRACT.md §4). */
export const LIVEKIT_TOOLSET = 'hermes-livekit-tools';
/** Where the operator enables it in the profile's config.yaml. */
export const LIVEKIT_TOOLSET_KEY = 'platform_toolsets.livekit';

/**
 * The operator's switch for remote tools: they reach the model only while the Hermes profile's config.yaml
 * lists `hermes-livekit-tools` in `platform_toolsets.livekit` (the reference plugin never turns the toolset
 * on by itself). Registration is not affected, only what a turn offers. The file is read again whenever it
 * changed (size, modification time or inode), checked at each registration and each turn, so an edit takes
 * effect on the next turn without a restart. A missing file, or one without the entry, keeps the tools hidden;
 * the first time that hides a registered tool the gateway logs, once, how to enable them.
 */
export class ToolsetGate {
  private seen: string | null = null;
  private on = false;
  private told = false;

  constructor(
    /** The profile's config.yaml, or null when the gateway runs without a Hermes profile. */
    private readonly file: string | null,
    private readonly logger: Logger,
  ) {}

  /** Whether `hermes-livekit-tools` is enabled for the livekit platform now. */
  enabled(): boolean {
    if (!this.file) return false;
    let stamp: string;
    try {
      const stat = statSync(this.file);
      stamp = `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    } catch {
      stamp = 'missing';
    }
    if (stamp === this.seen) return this.on;
    this.seen = stamp;
    let text = '';
    try {
      text = stamp === 'missing' ? '' : readFileSync(this.file, 'utf8');
    } catch {
      text = '';
    }
    const entries = profileConfigFromText(text, this.file).list(LIVEKIT_TOOLSET_KEY) ?? [];
    this.on = entries.some((entry) => typeof entry === 'string' && entry.trim() === LIVEKIT_TOOLSET);
    return this.on;
  }

  /** The tools a turn may offer the model: all of them with the toolset enabled, none without. */
  offer(tools: SessionTool[], room: string): SessionTool[] {
    if (tools.length === 0 || this.enabled()) return tools;
    if (!this.told) {
      this.told = true;
      this.logger.warn('remote_tools_hidden', {
        room,
        registered: tools.length,
        hint: `remote tools are registered but not offered to the model: add ${LIVEKIT_TOOLSET} to ${LIVEKIT_TOOLSET_KEY} in ${this.file ?? 'the Hermes profile config.yaml ($HERMES_HOME/config.yaml)'} (the next turn picks it up)`,
      });
    }
    return [];
  }
}
