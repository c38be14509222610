import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { z } from 'zod';
import { withFileLock } from '../credentials/file-lock.js';

/** A state file that exists but cannot be read as its schema; reported, never overwritten. */
export class CorruptStateError extends Error {
  constructor(readonly file: string) {
    super(`${path.basename(file)} is not valid; fix or remove it (it was left unchanged)`);
    this.name = 'CorruptStateError';
  }
}

/**
 * A small JSON settings file in a profile home (mode 0600, written to a temp file and renamed).
 * Writes to one file are serialised in this process; this service is the file's only writer.
 */
export class JsonStateFile<T> {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly file: string,
    private readonly schema: z.ZodType<T>,
    private readonly empty: () => T,
  ) {}

  /** The current value; the empty value when the file does not exist. */
  async read(): Promise<T> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return this.empty();
      throw error;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new CorruptStateError(this.file);
    }
    const parsed = this.schema.safeParse(json);
    if (!parsed.success) throw new CorruptStateError(this.file);
    return parsed.data;
  }

  /**
   * Replaces the file whole (a temporary file renamed over it, mode 0600 in a 0700 folder). Callers
   * that share the file with other processes hold their own lock around read and write.
   */
  async write(value: T): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      await writeFile(tmp, JSON.stringify(value) + '\n', { mode: 0o600 });
      await chmod(tmp, 0o600);
      await rename(tmp, this.file);
    } catch (error) {
      await rm(tmp, { force: true });
      throw error;
    }
  }

  /** Reads, changes and writes under this file's in-process lock; a corrupt file is left alone. */
  update(change: (current: T) => T): Promise<T> {
    const next = this.chain.then(async () => {
      const value = change(await this.read());
      await this.write(value);
      return value;
    });
    this.chain = next.catch(() => undefined);
    return next;
  }
}

/**
 * A profile's JSON file that other processes on this host may write too (the host and Hermes' own
 * plugin): reads take no lock (the file is replaced whole by rename, so a reader sees one version or the
 * other) and pass through `settle` (expiry worked out in memory); changes hold `.<name>.wlock`, the
 * O_EXCL lock every writer on this host takes (credentials/file-lock.ts).
 */
export class LockedJsonStore<T> {
  readonly file: string;
  private readonly lock: string;
  private readonly json: JsonStateFile<T>;

  constructor(
    readonly home: string,
    name: string,
    schema: z.ZodType<T>,
    empty: () => T,
    private readonly settle: (raw: T, nowS: number) => T,
  ) {
    this.file = path.join(home, name);
    this.lock = path.join(home, `.${name}.wlock`);
    this.json = new JsonStateFile(this.file, schema, empty);
  }

  async read(nowS: number): Promise<T> {
    return this.settle(await this.json.read(), nowS);
  }

  /**
   * Reads (settled), changes and writes under the lock; `change` returns the new file (the one it was
   * given when nothing changed) and what to answer. A settle that changed the file is written too.
   */
  async update<R>(nowS: number, change: (current: T) => { file: T; result: R }): Promise<R> {
    return withFileLock(this.lock, async () => {
      const raw = await this.json.read();
      const { file, result } = change(this.settle(raw, nowS));
      if (file !== raw) await this.json.write(file);
      return result;
    });
  }
}
