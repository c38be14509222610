import { mkdir, readFile, readdir, rename, rm, writeFile, chmod } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Logger } from '../log.js';

/** One spooled event: enough to send it again after a restart. */
export const spooledEntrySchema = z.object({
  v: z.literal(1),
  seq: z.number().int().nonnegative(),
  profile: z.object({ name: z.string(), home: z.string() }),
  event: z.looseObject({ event_id: z.string(), type: z.string() }),
  enqueued_at: z.number(),
  attempts: z.number().int().nonnegative(),
});
export type SpooledEntry = z.infer<typeof spooledEntrySchema>;

const FILE = /^(\d{16})\.json$/;

/**
 * The on-disk half of the delivery queue: one small file per undelivered event in a private folder
 * (0700, files 0600, written to a temp name and renamed, so a crash never leaves half a record).
 * A file that cannot be read back is renamed `*.corrupt` and reported, never silently deleted.
 * Content is stored as Hermes produced it; redaction and sealing happen at send time, so a change of
 * the redaction setting also applies to spooled events.
 */
export class Spool {
  private readonly writes = new Map<number, Promise<void>>();

  constructor(
    readonly dir: string,
    private readonly log: Logger,
  ) {}

  async load(): Promise<SpooledEntry[]> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const names = (await readdir(this.dir)).filter((name) => FILE.test(name)).sort();
    const entries: SpooledEntry[] = [];
    for (const name of names) {
      const file = path.join(this.dir, name);
      try {
        const parsed = spooledEntrySchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
        if (!parsed.success) throw new Error('schema');
        entries.push(parsed.data);
      } catch {
        this.log.error('spooled event is unreadable; kept as .corrupt', { file: name });
        await rename(file, file + '.corrupt').catch(() => undefined);
      }
    }
    return entries;
  }

  private fileOf(seq: number): string {
    return path.join(this.dir, `${String(seq).padStart(16, '0')}.json`);
  }

  /** Starts writing; never throws (a failed write only loses durability, the event stays queued). */
  write(entry: SpooledEntry): void {
    const file = this.fileOf(entry.seq);
    const previous = this.writes.get(entry.seq) ?? Promise.resolve();
    const done = previous
      .then(async () => {
        const tmp = `${file}.${process.pid}.tmp`;
        await writeFile(tmp, JSON.stringify(entry) + '\n', { mode: 0o600 });
        await chmod(tmp, 0o600);
        await rename(tmp, file);
      })
      .catch(() => this.log.warn('could not spool an event', { seq: entry.seq }));
    this.writes.set(entry.seq, done);
  }

  /** Removes an event's file once its pending write (if any) has landed, so nothing resurrects it. */
  remove(seq: number): Promise<void> {
    const pending = this.writes.get(seq) ?? Promise.resolve();
    const done = pending.then(() => rm(this.fileOf(seq), { force: true })).catch(() => undefined);
    this.writes.set(seq, done);
    void done.then(() => {
      if (this.writes.get(seq) === done) this.writes.delete(seq);
    });
    return done;
  }

  async flush(): Promise<void> {
    await Promise.all([...this.writes.values()]);
  }
}
