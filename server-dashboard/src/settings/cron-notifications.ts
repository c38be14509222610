import path from 'node:path';
import { z } from 'zod';
import { JsonStateFile } from '../state/json-state-file.js';

/** `<profile home>/conduit-cron.json`: the cron jobs whose runs send no reply or failure notification. */
const cronFileSchema = z.looseObject({ v: z.literal(1).optional(), muted: z.array(z.string()) });
type CronFile = z.infer<typeof cronFileSchema>;

export const CRON_FILE_NAME = 'conduit-cron.json';
const MAX_MUTED = 1000;

export class CronNotificationSettings {
  private readonly file: JsonStateFile<CronFile>;

  constructor(home: string) {
    this.file = new JsonStateFile(path.join(home, CRON_FILE_NAME), cronFileSchema, () => ({ v: 1, muted: [] }));
  }

  async muted(): Promise<string[]> {
    return [...(await this.file.read()).muted];
  }

  async isMuted(jobId: string): Promise<boolean> {
    return (await this.file.read()).muted.includes(jobId);
  }

  async setNotify(jobId: string, notify: boolean): Promise<string[]> {
    const next = await this.file.update((current) => {
      const muted = current.muted.filter((id) => id !== jobId);
      if (!notify) muted.push(jobId);
      return { ...current, v: 1, muted: muted.slice(-MAX_MUTED) };
    });
    return [...next.muted];
  }
}
