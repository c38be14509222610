/**
 * Cron delivery to Relay from outside Hermes. Hermes' scheduler writes every run of a job to
 * `<HERMES_HOME>/cron/output/<job id>/<YYYY-MM-DD_HH-MM-SS>.md` (atomically: a `.output_*.tmp` file
 * renamed into place) and keeps the jobs, with their `deliver` target, in `cron/jobs.json`. Hermes
 * cannot deliver to `relayapp` itself (no in-process platform), so the connector watches those
 * outputs and sends each new run of a job whose `deliver` names `relayapp` (the home chat) or
 * `relayapp:<chat id>` exactly once. Each output is recorded in the inbox database after its sends,
 * and every send carries `Idempotency-Key: cron-<hash of job/file>-<n>`, so a crash between the
 * sends and the record resends nothing.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Clock, Logger } from './clock.js';
import type { Inbox } from './inbox.js';
import { isSilent, planReply } from './outbound.js';
import { RelayApiError, type RelayApi } from './relay-api.js';

export const PLATFORM = 'relayapp';

/** Bounds of the cron watcher (constants; the connector exposes no setting for them). */
export const CRON_LIMITS = {
  /** fs.watch misses events on some filesystems (NFS, bind mounts) and before `cron/` exists, so a
   * full rescan runs this often regardless. */
  rescanMs: 30_000,
  /** Several events arrive for one atomic rename; one scan after they settle is enough. */
  watchSettleMs: 200,
  /** How much older than the first watch an output's mtime must be to count as history. */
  mtimeSlackMs: 2_000,
  /** A report longer than this is not a chat message; it is logged and skipped, never cut. */
  maxOutputBytes: 256 * 1024,
  /** Outputs settled per scan, so a backlog after a long outage drains across scans, not in one burst. */
  maxOutputsPerScan: 200,
} as const;

/** The chat a job's `deliver` sends to on this platform, `home` for the home chat, or null. */
export function relayTarget(deliver: unknown): { chat: string | 'home' } | null {
  const targets = Array.isArray(deliver)
    ? deliver.filter((d): d is string => typeof d === 'string')
    : typeof deliver === 'string'
      ? deliver.split(',')
      : [];
  for (const raw of targets) {
    const t = raw.trim();
    if (t === PLATFORM) return { chat: 'home' };
    if (t.startsWith(`${PLATFORM}:`) && t.length > PLATFORM.length + 1) return { chat: t.slice(PLATFORM.length + 1) };
  }
  return null;
}

/** Jobs whose `deliver` names this platform, by job id. An unreadable jobs.json means none. */
export function relayJobs(hermesHome: string): Map<string, { chat: string | 'home'; name: string }> {
  const out = new Map<string, { chat: string | 'home'; name: string }>();
  let data: unknown;
  try {
    data = JSON.parse(fs.readFileSync(path.join(hermesHome, 'cron', 'jobs.json'), 'utf8'));
  } catch {
    return out;
  }
  const jobs: unknown = Array.isArray(data) ? data : (data as { jobs?: unknown } | null)?.jobs;
  if (!Array.isArray(jobs)) return out;
  for (const job of jobs as Record<string, unknown>[]) {
    const id = job?.['id'];
    const target = relayTarget(job?.['deliver']);
    if (typeof id !== 'string' || target === null) continue;
    out.set(id, { ...target, name: typeof job['name'] === 'string' ? job['name'] : id });
  }
  return out;
}

/** The words to deliver: the run's `## Response` section (what Hermes itself delivers), else the file. */
export function cronResponseText(output: string): string {
  const m = /^## Response[ \t]*\r?\n/m.exec(output);
  return (m === null ? output : output.slice(m.index + m[0].length)).trim();
}

export interface CronDeliveryOptions {
  hermesHome: string;
  homeChat: string | null;
  inbox: Inbox;
  api: RelayApi;
  clock: Clock;
  log: Logger;
}

export class CronDelivery {
  private watcher: fs.FSWatcher | null = null;
  private rescanTimer: { cancel(): void } | null = null;
  private settleTimer: { cancel(): void } | null = null;
  private scanning: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly since: number;
  private readonly outputDir: string;

  constructor(private readonly o: CronDeliveryOptions) {
    this.since = o.inbox.cronWatchSince(o.clock.now());
    this.outputDir = path.join(o.hermesHome, 'cron', 'output');
  }

  start(): void {
    this.watch();
    const tick = () => {
      if (this.stopped) return;
      this.kick();
      this.rescanTimer = this.o.clock.setTimeout(tick, CRON_LIMITS.rescanMs);
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.close();
    this.rescanTimer?.cancel();
    this.settleTimer?.cancel();
    await this.scanning;
  }

  /** Runs a scan now, or once more after the running one (scans never overlap). */
  kick(): void {
    if (this.stopped) return;
    if (this.scanning !== null) {
      this.again = true;
      return;
    }
    this.scanning = this.scan()
      .catch((err: unknown) => this.o.log.warn('relay cron scan failed', { error: (err as Error).message }))
      .finally(() => {
        this.scanning = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private watch(): void {
    if (this.watcher !== null) return;
    try {
      // The whole cron directory: output/<job id>/ directories appear as jobs first run.
      this.watcher = fs.watch(path.join(this.o.hermesHome, 'cron'), { recursive: true }, () => {
        this.settleTimer?.cancel();
        this.settleTimer = this.o.clock.setTimeout(() => this.kick(), CRON_LIMITS.watchSettleMs);
      });
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = null;
      });
    } catch {
      this.watcher = null; // no cron/ yet: the rescan finds it and watches then
    }
  }

  private async scan(): Promise<void> {
    this.watch();
    const jobs = relayJobs(this.o.hermesHome);
    let budget: number = CRON_LIMITS.maxOutputsPerScan;
    for (const [jobId, job] of jobs) {
      let files: string[];
      try {
        files = fs.readdirSync(path.join(this.outputDir, jobId));
      } catch {
        continue;
      }
      // File names are the run's local time stamp, so name order is run order.
      for (const file of files.filter((f) => f.endsWith('.md') && !f.startsWith('.')).sort()) {
        if (this.stopped || budget === 0) {
          if (budget === 0) this.again = true;
          return;
        }
        const key = `${jobId}/${file}`;
        if (this.o.inbox.cronOutputSettled(key)) continue;
        budget -= 1;
        await this.deliver(key, path.join(this.outputDir, jobId, file), job);
      }
    }
  }

  private async deliver(key: string, file: string, job: { chat: string | 'home'; name: string }): Promise<void> {
    const fields = { job: job.name, output: key };
    const stat = fs.lstatSync(file);
    // The filesystem stamps files from the kernel's coarse clock, which may lag Date.now() by a few
    // milliseconds: an output written just after the first watch can carry an earlier mtime, so only
    // outputs clearly older than the first watch are history.
    if (!stat.isFile() || stat.mtimeMs < this.since - CRON_LIMITS.mtimeSlackMs) {
      return this.o.inbox.settleCronOutput(key, null, 'predates');
    }
    if (stat.size > CRON_LIMITS.maxOutputBytes) {
      this.o.log.warn('relay cron output too large to send; skipped', { ...fields, bytes: stat.size });
      return this.o.inbox.settleCronOutput(key, null, 'too_large');
    }
    const chatId = job.chat === 'home' ? this.o.homeChat : job.chat;
    if (chatId === null) {
      this.o.log.warn('relay cron output not sent: RELAY_HOME_CHAT is not set', fields);
      return this.o.inbox.settleCronOutput(key, null, 'no_home_chat');
    }
    const text = cronResponseText(fs.readFileSync(file, 'utf8'));
    if (text === '' || isSilent(text)) return this.o.inbox.settleCronOutput(key, chatId, 'silent');
    const plan = planReply(text);
    for (const reason of plan.refusals) this.o.log.warn('relay component stayed in the words', { ...fields, reason });
    if (plan.payment || plan.invoice || plan.reaction)
      this.o.log.warn('relay cron delivery sends words only; payment, invoice and reaction blocks are dropped', fields);
    const base = `cron-${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
    for (const [n, message] of plan.messages.entries()) {
      try {
        await this.o.api.sendMessage(chatId, message, `${base}-${n}`);
      } catch (err) {
        // A refusal will be refused again; anything else (auth, rate limit, outage) waits for a rescan.
        if (err instanceof RelayApiError && (err.kind === 'rejected' || err.kind === 'conflict')) {
          this.o.log.error('relay refused a cron delivery', { ...fields, chat_id: chatId, error: err.message });
          return this.o.inbox.settleCronOutput(key, chatId, 'refused');
        }
        throw err;
      }
    }
    this.o.inbox.settleCronOutput(key, chatId, 'sent');
    this.o.log.info('relay cron output delivered', { ...fields, chat_id: chatId, messages: plan.messages.length });
  }
}
