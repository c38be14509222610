import type { ProfileScope } from '../notifier/notifier.js';
import { CronNotificationSettings } from './cron-notifications.js';
import { ReplySourceSettings } from './reply-sources.js';

/** One settings object per profile home, so writes to a file are serialised in this process. */
export class ProfileSettings {
  private readonly crons = new Map<string, CronNotificationSettings>();
  private readonly sources = new Map<string, ReplySourceSettings>();

  cron(profile: ProfileScope): CronNotificationSettings {
    let s = this.crons.get(profile.home);
    if (!s) this.crons.set(profile.home, (s = new CronNotificationSettings(profile.home)));
    return s;
  }

  replySources(profile: ProfileScope): ReplySourceSettings {
    let s = this.sources.get(profile.home);
    if (!s) this.sources.set(profile.home, (s = new ReplySourceSettings(profile.home)));
    return s;
  }
}
