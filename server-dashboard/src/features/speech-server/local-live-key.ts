import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import { LOCAL_LIVE_KEY_PATTERN } from '@conduit/contracts/dashboard/local-live';
import { sameSecret } from '@conduit/contracts/server/secrets';
import { writeFileAtomic } from '../../credentials/atomic-write.js';
import type { Clock } from '../../clock.js';
import type { ProfileScope } from '../../notifier/notifier.js';

/** `<profile home>/conduit-local-live/key`: the folder is 0700 and the file 0600, as every credential here. */
const KEY_FOLDER = 'conduit-local-live';
const KEY_FILE = 'key';

/**
 * How long a key read from disk is trusted before it is read again. A rotation in this process takes
 * effect at once (the cache is replaced); another process sharing the home sees it within this bound
 * (the seed: "other processes accept it for up to 30 seconds").
 */
const KEY_CACHE_MS = 30_000;

/** A new key for `profile`: `cll.<profile>.<32 random bytes, base64url>`. */
function mintKey(profile: string): string {
  return `cll.${profile}.${randomBytes(32).toString('base64url')}`;
}

/** The profile a presented key names, or null when it is not a Local Live key at all. */
export function profileOfKey(key: string): string | null {
  return LOCAL_LIVE_KEY_PATTERN.exec(key)?.[1] ?? null;
}

function keyFile(profile: ProfileScope): string {
  return path.join(profile.home, KEY_FOLDER, KEY_FILE);
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && error.code === code;
}

/**
 * The per-profile Local Live keys: made on first use, kept in the profile's home, rotated on request.
 * The key names its profile, so a request is matched against that profile's key alone, compared in
 * constant time.
 */
export class LocalLiveKeys {
  private readonly cache = new Map<string, { key: string | null; until: number }>();
  /** Creations and rotations of one profile run one at a time in this process. */
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(private readonly clock: Clock) {}

  /** The profile's key, made now when it has none. */
  async current(profile: ProfileScope): Promise<string> {
    return this.serialised(profile, async () => (await this.read(profile)) ?? (await this.create(profile)));
  }

  /** Replaces the profile's key; the old one is refused from the moment this resolves. */
  async rotate(profile: ProfileScope): Promise<string> {
    return this.serialised(profile, async () => {
      const key = mintKey(profile.name);
      await writeFileAtomic(keyFile(profile), `${key}\n`);
      this.remember(profile, key);
      return key;
    });
  }

  /** Whether `presented` is the profile's current key (never made here: a profile without one accepts none). */
  async accepts(profile: ProfileScope, presented: string): Promise<boolean> {
    const cached = this.cache.get(profile.name);
    const key = cached && cached.until > this.clock.now() ? cached.key : await this.read(profile);
    return key !== null && sameSecret(presented, key);
  }

  private async read(profile: ProfileScope): Promise<string | null> {
    let key: string | null;
    try {
      const text = (await readFile(keyFile(profile), 'utf8')).trim();
      // A file that holds no key of this profile accepts nothing; the status route then replaces it.
      key = profileOfKey(text) === profile.name ? text : null;
    } catch (error) {
      if (!isCode(error, 'ENOENT')) throw error;
      key = null;
    }
    this.remember(profile, key);
    return key;
  }

  /**
   * Writes a first key without ever replacing one: the key goes to a private temp file that is then
   * hard-linked into place, which fails when another process made the key first (that key is kept).
   */
  private async create(profile: ProfileScope): Promise<string> {
    const file = keyFile(profile);
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await chmod(path.dirname(file), 0o700);
    const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const key = mintKey(profile.name);
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(`${key}\n`, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await chmod(temp, 0o600);
      await link(temp, file);
    } catch (error) {
      if (!isCode(error, 'EEXIST')) throw error;
      // A file that exists but holds no key (read said none) is replaced, as a rotation would.
      const existing = await this.read(profile);
      if (existing) return existing;
      await writeFileAtomic(file, `${key}\n`);
    } finally {
      await unlink(temp).catch(() => undefined);
    }
    this.remember(profile, key);
    return key;
  }

  private remember(profile: ProfileScope, key: string | null): void {
    this.cache.set(profile.name, { key, until: this.clock.now() + KEY_CACHE_MS });
  }

  private serialised<T>(profile: ProfileScope, work: () => Promise<T>): Promise<T> {
    const next = (this.chains.get(profile.name) ?? Promise.resolve()).then(work);
    const settled = next.catch(() => undefined);
    this.chains.set(profile.name, settled);
    void settled.then(() => {
      if (this.chains.get(profile.name) === settled) this.chains.delete(profile.name);
    });
    return next;
  }
}
