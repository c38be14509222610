/**
 * Connector configuration (PROTOCOL.md §1). Profile scoped: the environment wins over the profile's
 * `gateway.platforms.relayapp.extra` map in config.yaml. Every bound lives in the table below with
 * its default and variable; a bad value fails boot with a message naming the variable.
 */
import path from 'node:path';
import { normalizeRelayBaseUrl, PRODUCTION_BASE_URL, RelayBaseUrlError, type RelayOrigin } from './base-url.js';

export class MessengerConfigError extends Error {
  override name = 'MessengerConfigError';
}

export type ReplyToMode = 'off' | 'first' | 'all' | 'auto';
export type GroupChatPolicy = 'mentions' | 'all';
/** Hermes' `display.busy_input_mode`: what a message arriving mid-turn does. */
export type BusyInputMode = 'interrupt' | 'queue' | 'steer';

export interface MessengerConfig {
  /** Bearer for REST and the WebSocket upgrade. Never logged, never written. */
  agentToken: string;
  relay: RelayOrigin;
  /** Contact ids allowed to start turns; empty means every reachable Contact. */
  allowedContacts: ReadonlySet<string>;
  /**
   * Contact ids that may answer any pending approval in a group chat, beside the person who started
   * the waiting turn (Hermes' `allow_admin_from`, or `group_allow_admin_from` when that is set).
   */
  groupApprovalAdmins: ReadonlySet<string>;
  /**
   * Slash commands (Hermes' `allow_admin_from` / `user_allowed_commands`, as on Telegram): when
   * `admins` is empty anyone may run every command; otherwise the admins may, and anyone else only
   * the commands `userAllowed` names (lower case, without the slash).
   */
  commands: { admins: ReadonlySet<string>; userAllowed: ReadonlySet<string> };
  /**
   * Hermes' global `display.busy_input_mode` (default interrupt; HERMES_GATEWAY_BUSY_INPUT_MODE wins, as
   * in Hermes' gateway): a message arriving while the chat's turn runs interrupts it, is steered into
   * it, or is queued behind it.
   */
  busyInputMode: BusyInputMode;
  stateDir: string;
  replyToMode: ReplyToMode;
  groupChatPolicy: GroupChatPolicy;
  homeChat: string | null;
  /** The Hermes profile home (`$HERMES_HOME`), whose `cron/` the connector delivers from. */
  hermesHome: string;
  homeChatName: string | null;
  hermes: { baseUrl: string; apiKey: string | null; profile: string | null };
  /** CONDUIT_MESSENGER_METRICS_PORT/_TOKEN: the loopback `/metrics` listener of the inbox (metrics.ts); unset: none. */
  metrics?: { port: number; token: string };
}

/** `extra` keys of `gateway.platforms.relayapp` in the profile's config.yaml. */
export type ProfileExtra = Record<string, unknown>;

function pick(
  env: NodeJS.ProcessEnv,
  extra: ProfileExtra,
  envNames: string[],
  extraKeys: string[],
): string | undefined {
  for (const name of envNames) {
    const v = env[name];
    if (v !== undefined && v !== '') return v;
  }
  for (const key of extraKeys) {
    const v = extra[key];
    if (typeof v === 'string' && v !== '') return v;
    if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string').join(',');
  }
  return undefined;
}

/** A comma-separated (or YAML list) setting of Contact ids, blanks dropped. */
function contactIds(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * Reads the configuration. `profileHome` is the Hermes profile home (`$HERMES_HOME`), the default
 * parent of the state directory so every profile has its own inbox.
 */
export function readMessengerConfig(
  env: NodeJS.ProcessEnv,
  profileHome: string,
  extra: ProfileExtra = {},
  display: { busy_input_mode?: unknown } = {},
): MessengerConfig {
  const agentToken = pick(env, extra, ['RELAY_AGENT_TOKEN'], ['token']);
  if (agentToken === undefined || agentToken.trim() === '') {
    throw new MessengerConfigError('RELAY_AGENT_TOKEN is required');
  }
  const rawBase = pick(env, extra, ['RELAY_BASE_URL', 'RELAY_API_URL'], ['base_url', 'api_url']);
  let relay: RelayOrigin;
  try {
    // Only an unset value takes the production default; a set but invalid one fails closed.
    relay = normalizeRelayBaseUrl(rawBase ?? PRODUCTION_BASE_URL);
  } catch (err) {
    if (err instanceof RelayBaseUrlError) throw new MessengerConfigError(`RELAY_BASE_URL: ${err.message}`);
    throw err;
  }
  const allowed = contactIds(pick(env, extra, ['RELAY_ALLOWED_CONTACTS'], ['allowed_contacts']));
  // Hermes keeps one admin list per scope; a group list, when set, is the one for group chats (the
  // only chats where the approval rule names admins). Without one, `allow_admin_from` applies, as
  // the adapter seed says. Unset: only the requester may answer in a group.
  const groupApprovalAdmins = contactIds(
    pick(env, extra, ['RELAY_GROUP_ALLOW_ADMIN_FROM'], ['group_allow_admin_from']) ??
      pick(env, extra, ['RELAY_ALLOW_ADMIN_FROM'], ['allow_admin_from']),
  );
  const commandAdmins = contactIds(pick(env, extra, ['RELAY_ALLOW_ADMIN_FROM'], ['allow_admin_from']));
  const userAllowed = contactIds(pick(env, extra, ['RELAY_USER_ALLOWED_COMMANDS'], ['user_allowed_commands'])).map(
    (name) => name.replace(/^\//, '').toLowerCase(),
  );
  const busyRaw = (env['HERMES_GATEWAY_BUSY_INPUT_MODE'] ?? display.busy_input_mode ?? 'interrupt')
    .toString()
    .trim()
    .toLowerCase();
  // An unknown mode is Hermes' default, as its gateway reads it.
  const busyInputMode: BusyInputMode = busyRaw === 'queue' || busyRaw === 'steer' ? busyRaw : 'interrupt';
  const replyToMode = (pick(env, extra, ['RELAY_REPLY_TO_MODE'], ['reply_to_mode']) ?? 'auto').trim().toLowerCase();
  if (!['off', 'first', 'all', 'auto'].includes(replyToMode)) {
    throw new MessengerConfigError('RELAY_REPLY_TO_MODE must be off, first, all or auto');
  }
  // An unknown group policy means "mentions": the quieter choice, as the reference adapter does.
  const policyRaw = (pick(env, extra, ['RELAY_GROUP_CHAT_POLICY'], ['group_chat_policy']) ?? 'mentions').trim();
  const groupChatPolicy: GroupChatPolicy = policyRaw.toLowerCase() === 'all' ? 'all' : 'mentions';
  const stateDir = path.resolve(
    pick(env, extra, ['RELAY_STATE_DIR'], ['state_dir']) ?? path.join(profileHome, 'relay'),
  );
  const homeChannel = extra['home_channel'];
  const homeChat = pick(env, {}, ['RELAY_HOME_CHAT'], []) ?? (typeof homeChannel === 'string' ? homeChannel : null);
  const hermesBase = env['HERMES_API_URL'] ?? `http://127.0.0.1:${env['API_SERVER_PORT'] ?? '8642'}`;
  const metrics = messengerMetricsSetting(env);
  return {
    agentToken,
    relay,
    allowedContacts: new Set(allowed),
    groupApprovalAdmins: new Set(groupApprovalAdmins),
    commands: { admins: new Set(commandAdmins), userAllowed: new Set(userAllowed) },
    busyInputMode,
    stateDir,
    replyToMode: replyToMode as ReplyToMode,
    groupChatPolicy,
    homeChat: homeChat ?? null,
    hermesHome: profileHome,
    homeChatName: env['RELAY_HOME_CHAT_NAME'] ?? null,
    hermes: {
      baseUrl: hermesBase.replace(/\/+$/, ''),
      apiKey: env['API_SERVER_KEY'] ?? null,
      profile: env['HERMES_PROFILE'] ?? null,
    },
    ...(metrics ? { metrics } : {}),
  };
}

/** The metrics listener: a port (0 = any free one) and the token it requires, which must come with it. */
function messengerMetricsSetting(env: NodeJS.ProcessEnv): { port: number; token: string } | null {
  const portText = env['CONDUIT_MESSENGER_METRICS_PORT']?.trim();
  if (!portText) return null;
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    throw new MessengerConfigError('CONDUIT_MESSENGER_METRICS_PORT must be a port number');
  }
  const token = env['CONDUIT_MESSENGER_METRICS_TOKEN']?.trim() ?? '';
  if (token.length < 16) {
    throw new MessengerConfigError(
      'CONDUIT_MESSENGER_METRICS_TOKEN (at least 16 characters) must be set with CONDUIT_MESSENGER_METRICS_PORT',
    );
  }
  return { port, token };
}
