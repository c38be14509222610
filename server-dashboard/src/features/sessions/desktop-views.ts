import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { DESKTOP_VIEWS_MAX } from '@conduit/contracts/dashboard/sessions';
import { isProfileName } from '@conduit/contracts/dashboard/profile';
import { writeFileAtomic } from '../../credentials/atomic-write.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import { canReadProcessStarts } from './process-liveness.js';
import { publishHomeSelection } from './desktop-selection-file.js';

/** `<hermes home>/conduit-desktop-views.json`: `{"version": 1, "views": {<stored id>: view}}`. */
export const DESKTOP_VIEWS_FILE = 'conduit-desktop-views.json';

/** One chat as the views file keeps it (times in seconds since the epoch, as Hermes stamps them). */
export interface StoredView {
  opened_at: number;
  seen_through: number;
  client: 'desktop' | 'browser';
  open?: true;
}

/** The bounds of the observer (the seed's Desktop views). */
export const OBSERVER_BOUNDS = {
  /** A selection that ends is noticed within this (the seed: a closed socket within 5 s). */
  passMs: 5000,
  /** Views are written this long after a change, so a burst of switches is one write. */
  writeDelayMs: 2000,
  /** A larger views file is not read (2,000 views are well under this). */
  fileMaxBytes: 2 * 1024 * 1024,
} as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function validView(value: unknown): StoredView | null {
  if (!isRecord(value)) return null;
  const { opened_at: opened, seen_through: seen, client, open } = value;
  if (typeof opened !== 'number' || !Number.isFinite(opened)) return null;
  if (typeof seen !== 'number' || !Number.isFinite(seen)) return null;
  if (client !== 'desktop' && client !== 'browser') return null;
  return { opened_at: opened, seen_through: seen, client, ...(open === true ? { open: true as const } : {}) };
}

/** Keeps the newest `DESKTOP_VIEWS_MAX` views by when they were last seen. */
function newest(views: Map<string, StoredView>): Map<string, StoredView> {
  if (views.size <= DESKTOP_VIEWS_MAX) return views;
  const kept = [...views].sort((a, b) => b[1].seen_through - a[1].seen_through).slice(0, DESKTOP_VIEWS_MAX);
  return new Map(kept);
}

/**
 * The views a home's file holds: a missing, oversized or malformed file holds none (it is this host's own
 * record of what it observed, never Hermes' data), and an entry of another shape is skipped alone.
 */
export async function readViewsFile(home: string): Promise<Map<string, StoredView>> {
  let data: unknown;
  try {
    const text = await readFile(path.join(home, DESKTOP_VIEWS_FILE), 'utf8');
    if (text.length > OBSERVER_BOUNDS.fileMaxBytes) return new Map();
    data = JSON.parse(text);
  } catch {
    return new Map();
  }
  const views = new Map<string, StoredView>();
  if (!isRecord(data) || data.version !== 1 || !isRecord(data.views)) return views;
  for (const [id, raw] of Object.entries(data.views)) {
    const view = validView(raw);
    if (view && id.length > 0 && id.length <= 500) views.set(id, view);
  }
  return newest(views);
}

/**
 * What one home's Desktop has had open: per chat its newest open and how long it then stayed selected.
 * A chat is `open` while it is in the selection; its `seen_through` advances with each observation and
 * stops where the selection moved on.
 */
class HomeViews {
  private views: Map<string, StoredView> | null = null;
  private open = new Set<string>();
  private writeTimer: NodeJS.Timeout | null = null;
  /** Passes completed for this home; observing starts with the first. */
  passes = 0;
  registryReadable = true;

  constructor(readonly home: string) {}

  /** Applies one observation; true when an open or a close changed what the file should say. */
  async observe(selection: ReadonlySet<string>, nowS: number): Promise<boolean> {
    this.views ??= await readViewsFile(this.home);
    let changed = false;
    for (const id of selection) {
      const view = this.views.get(id);
      if (!this.open.has(id) || !view) {
        this.views.set(id, { opened_at: nowS, seen_through: nowS, client: 'desktop' });
        changed = true;
      } else {
        view.seen_through = nowS;
      }
    }
    for (const id of this.open) {
      if (selection.has(id)) continue;
      const view = this.views.get(id);
      if (view) view.seen_through = nowS;
      changed = true;
    }
    this.open = new Set(selection);
    this.views = newest(this.views);
    return changed;
  }

  isOpen(id: string): boolean {
    return this.open.has(id);
  }

  /** The views as the file keeps them, open chats marked. */
  snapshot(): Record<string, StoredView> {
    const out: Record<string, StoredView> = {};
    for (const [id, view] of this.views ?? []) {
      out[id] = this.open.has(id) ? { ...view, open: true } : { ...view };
    }
    return out;
  }

  scheduleWrite(delayMs: number, write: () => void): void {
    if (this.writeTimer) return;
    this.writeTimer = setTimeout(() => {
      this.writeTimer = null;
      write();
    }, delayMs);
    this.writeTimer.unref();
  }

  /** Cancels a pending write; true when there is something the file doesn't have yet. */
  cancelWrite(): boolean {
    const pending = this.writeTimer !== null;
    if (this.writeTimer) clearTimeout(this.writeTimer);
    this.writeTimer = null;
    return pending || this.open.size > 0;
  }

  /** Observation ends: the open chats were seen through now, and nothing is open any more. */
  close(nowS: number): void {
    for (const id of this.open) {
      const view = this.views?.get(id);
      if (view) view.seen_through = nowS;
    }
    this.open.clear();
  }
}

export interface ObserverOptions {
  hermesHome: string;
  clock: Clock;
  log: Logger;
  passMs?: number;
  writeDelayMs?: number;
  /** Reports each completed pass over every home (tests wait on it). */
  onPass?: () => void;
  /** Reports each views file written, with its home. */
  onWrite?: (home: string) => void;
}

/** The homes of every profile: the root home and each `profiles/<name>` Hermes could have made. */
async function profileHomes(root: string): Promise<string[]> {
  const homes = [root];
  try {
    for (const entry of await readdir(path.join(root, 'profiles'), { withFileTypes: true })) {
      if (entry.isDirectory() && isProfileName(entry.name)) homes.push(path.join(root, 'profiles', entry.name));
    }
  } catch {
    // No profiles folder: the root home alone.
  }
  return homes;
}

/**
 * Watches which chats Hermes Desktop (or the web dashboard) has selected, per Hermes home, every few
 * seconds: from the selection the proxy's publisher writes for sockets that pass through this service,
 * and from Hermes' ownership registry for a Desktop connected to Hermes directly (publishing that part
 * for the turn hooks, see desktop-selection-file.ts). It records the views in `conduit-desktop-views.json`
 * and never writes anything of Hermes' own (state.db, its read flags).
 */
export class DesktopViewsObserver {
  private readonly homes = new Map<string, HomeViews>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: ObserverOptions) {}

  start(): void {
    if (this.timer || this.stopped) return;
    void this.pass();
    this.timer = setInterval(() => void this.pass(), this.options.passMs ?? OBSERVER_BOUNDS.passMs);
    // Observation must never keep the process alive on shutdown.
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    // What was still selected or not yet written is saved once, without `open`: no one watches now.
    const nowS = this.options.clock.now() / 1000;
    const unsaved = [...this.homes.values()].filter((views) => views.cancelWrite());
    for (const views of unsaved) views.close(nowS);
    await Promise.all(unsaved.map((views) => this.write(views, true)));
  }

  /** One pass over every home; a pass still running is not doubled. */
  pass(): Promise<void> {
    this.running ??= this.passHomes().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async passHomes(): Promise<void> {
    const nowMs = this.options.clock.now();
    for (const home of await profileHomes(this.options.hermesHome)) {
      if (this.stopped) return;
      const views = this.homes.get(home) ?? new HomeViews(home);
      this.homes.set(home, views);
      try {
        const selection = await publishHomeSelection(home, nowMs);
        views.registryReadable = selection.registryReadable;
        if (await views.observe(selection.chats, nowMs / 1000)) {
          views.scheduleWrite(this.options.writeDelayMs ?? OBSERVER_BOUNDS.writeDelayMs, () => void this.write(views));
        }
      } catch (error) {
        this.options.log.warn('desktop views not observed', { error: error instanceof Error ? error.name : 'error' });
      }
      views.passes += 1;
    }
    this.options.onPass?.();
  }

  private async write(views: HomeViews, final = false): Promise<void> {
    if (this.stopped && !final) return;
    try {
      const file = path.join(views.home, DESKTOP_VIEWS_FILE);
      await writeFileAtomic(file, JSON.stringify({ version: 1, views: views.snapshot() }) + '\n');
      this.options.onWrite?.(views.home);
    } catch (error) {
      this.options.log.warn('desktop views not written', { error: error instanceof Error ? error.name : 'error' });
    }
  }

  /**
   * Whether this host observes the home's Desktop now: `waiting` until its first pass has run;
   * `gateway-unsupported` where a Desktop connected to Hermes directly can't be seen (no process start
   * times on this platform, or a registry in a form this host doesn't read).
   */
  status(home: string): { observing: boolean; reason: 'waiting' | 'gateway-unsupported' | null } {
    const views = this.homes.get(home);
    if (!views || views.passes === 0) return { observing: false, reason: 'waiting' };
    if (!canReadProcessStarts() || !views.registryReadable) return { observing: false, reason: 'gateway-unsupported' };
    return { observing: true, reason: null };
  }

  /**
   * The views of a home as the route answers them: the file, with the chats selected right now marked
   * `open` and seen through `nowS` (the moment of the read). An `open` the file kept from an observer
   * that is no longer watching is dropped: nothing confirms it now.
   */
  async viewsAt(home: string, nowS: number): Promise<Record<string, StoredView>> {
    const stored = await readViewsFile(home);
    const live = this.homes.get(home);
    const out: Record<string, StoredView> = {};
    for (const [id, view] of stored) {
      const { open: _open, ...rest } = view;
      out[id] = live?.isOpen(id) ? { ...rest, seen_through: Math.max(rest.seen_through, nowS), open: true } : rest;
    }
    // A chat opened since the last write is not in the file yet.
    for (const [id, view] of Object.entries(live?.snapshot() ?? {})) {
      if (!out[id] && view.open) out[id] = { ...view, seen_through: Math.max(view.seen_through, nowS) };
    }
    return out;
  }
}
