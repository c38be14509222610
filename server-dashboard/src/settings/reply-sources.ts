import path from 'node:path';
import { z } from 'zod';
import { JsonStateFile } from '../state/json-state-file.js';
import { REPLY_SOURCES, type ReplySource } from '../notifier/reply-source.js';

/** `<profile home>/conduit-notifications.json`: which sources send a "response ready" push. */
const notificationsFileSchema = z.looseObject({
  v: z.literal(1).optional(),
  reply_sources: z.record(z.string(), z.boolean()).optional(),
});
type NotificationsFile = z.infer<typeof notificationsFileSchema>;

export const NOTIFICATIONS_FILE_NAME = 'conduit-notifications.json';

export type ReplySourceChoices = Record<ReplySource, boolean>;

export class ReplySourceSettings {
  private readonly file: JsonStateFile<NotificationsFile>;

  constructor(home: string) {
    this.file = new JsonStateFile(path.join(home, NOTIFICATIONS_FILE_NAME), notificationsFileSchema, () => ({ v: 1 }));
  }

  /** Every source, on unless turned off. */
  async choices(): Promise<ReplySourceChoices> {
    const stored = (await this.file.read()).reply_sources ?? {};
    const out = {} as ReplySourceChoices;
    for (const source of REPLY_SOURCES) out[source] = stored[source] !== false;
    return out;
  }

  async isOn(source: ReplySource): Promise<boolean> {
    return (await this.choices())[source];
  }

  async set(source: ReplySource, notify: boolean): Promise<ReplySourceChoices> {
    await this.file.update((current) => ({
      ...current,
      v: 1,
      reply_sources: { ...(current.reply_sources ?? {}), [source]: notify },
    }));
    return this.choices();
  }
}
