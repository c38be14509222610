import { TITLE_MAX, clean } from './text.js';

export type NotificationType =
  | 'approval.needed'
  | 'input.needed'
  | 'response.ready'
  | 'turn.failed'
  | 'background_task.finished'
  | 'call.requested'
  | 'plugin.hello';

/** The generic label each kind is prefixed with when the session has a title ("Approval needed · Infra"). */
const LABELS: Record<NotificationType, string | null> = {
  'approval.needed': 'Approval needed',
  'input.needed': 'Input needed',
  'response.ready': null,
  'turn.failed': 'Turn failed',
  'background_task.finished': 'Background task finished',
  'call.requested': null,
  'plugin.hello': null,
};

/** Conduit's Bot Chat sessions are all titled this; the bot's profile tells them apart. */
export const BOT_CHAT_TITLE = 'Bot Chat';

/**
 * The notification title: a reply shows the session title itself, the other kinds prefix it with
 * their label. An untitled session gets no title, so the relay and the app keep the generic copy.
 */
export function notificationTitle(
  type: NotificationType,
  sessionTitle: string | null,
  profileName: string,
): string | undefined {
  let subject = clean(sessionTitle ?? '', TITLE_MAX);
  if (subject === BOT_CHAT_TITLE) subject = clean(profileName, TITLE_MAX);
  if (!subject) return undefined;
  const label = LABELS[type];
  return clean(label ? `${label} · ${subject}` : subject, TITLE_MAX) || undefined;
}
