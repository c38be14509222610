import { e2eState, isPaired, relayUrlOf } from '../credentials/credential-file.js';
import { CorruptCredentialsError, readCredentials } from '../credentials/credential-store.js';
import type { ProfileScope } from '../notifier/notifier.js';
import type { ProfileSettings } from '../settings/profile-settings.js';

/**
 * What `conduit_status` tells Hermes about one profile: whether it is paired with Conduit, through
 * which relay, whether content is redacted or end-to-end encrypted, and which notifications the user
 * turned off. The same facts `conduit push status` prints; never the credential or any key.
 */
export interface ConduitStatus {
  [key: string]: unknown;
  profile: string;
  paired: boolean;
  /** Set when the pairing file exists but cannot be read; nothing else about the pairing is known. */
  pairing_error?: string;
  gateway_name?: string;
  relay_url?: string;
  redact_content?: boolean;
  end_to_end_encryption?: 'on' | 'off' | 'broken';
  notifications: {
    /** Cron job ids whose runs send no reply or failure notification. */
    muted_cron_jobs: string[];
    /** Whether a finished reply from each source sends "response ready". */
    reply_sources: Record<string, boolean>;
  };
}

export async function conduitStatus(profile: ProfileScope, settings: ProfileSettings): Promise<ConduitStatus> {
  const notifications = {
    muted_cron_jobs: await settings.cron(profile).muted(),
    reply_sources: { ...(await settings.replySources(profile).choices()) },
  };
  let file;
  try {
    file = await readCredentials(profile.home);
  } catch (error) {
    if (!(error instanceof CorruptCredentialsError)) throw error;
    return {
      profile: profile.name,
      paired: false,
      pairing_error: 'conduit-push.json is unreadable; run `conduit push status` on the host',
      notifications,
    };
  }
  if (!isPaired(file)) return { profile: profile.name, paired: false, notifications };
  return {
    profile: profile.name,
    paired: true,
    ...(file.gateway_name ? { gateway_name: file.gateway_name } : {}),
    relay_url: relayUrlOf(file),
    redact_content: file.redact_content === true,
    end_to_end_encryption: e2eState(file).state,
    notifications,
  };
}
