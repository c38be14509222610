import { appendFile, chmod, mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ApnsNotification, ApnsResult, ApnsSender } from './types.js';

/**
 * APNS_CAPTURE_PATH: every send appended as one JSON line `{deviceToken, notification}`, so operators
 * and client developers can see exactly what the relay would push. The file holds device tokens and
 * payloads, hence mode 0600.
 */
export class CaptureLog {
  private ready: Promise<void> | undefined;
  /** Lines waiting for the next write, with the callers waiting on them. */
  private pending: { line: string; done: (error?: unknown) => void }[] = [];
  private writing: Promise<void> | undefined;

  constructor(private readonly path: string) {}

  /**
   * Appends one line; lines are written in call order. Lines that arrive while a write is in flight
   * go out together in the next one (one open/append per batch, not per push, on the event hot path).
   */
  append(deviceToken: string, notification: ApnsNotification): Promise<void> {
    const line = `${JSON.stringify({ deviceToken, notification: captured(notification) })}\n`;
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ line, done: (error) => (error === undefined ? resolve() : reject(error)) });
      this.writing ??= this.drain();
    });
  }

  /** Resolves once every queued line is on disk. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      try {
        await this.ensureFile();
        await appendFile(this.path, batch.map((entry) => entry.line).join(''), { mode: 0o600 });
        for (const entry of batch) entry.done();
      } catch (error) {
        // A failed write must not block later ones; each caller in the batch sees the failure.
        for (const entry of batch) entry.done(error ?? new Error('capture write failed'));
      }
    }
    this.writing = undefined;
  }

  private ensureFile(): Promise<void> {
    this.ready ??= (async () => {
      await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
      const handle = await open(this.path, 'a', 0o600);
      await handle.close();
      // An existing file keeps its old mode on open(); tighten it.
      await chmod(this.path, 0o600);
    })();
    return this.ready;
  }
}

/** The captured shape: only the documented fields, absent ones left out. */
function captured(notification: ApnsNotification): Record<string, unknown> {
  const out: Record<string, unknown> = { payload: notification.payload };
  if (notification.collapseId !== undefined) out.collapseId = notification.collapseId;
  if (notification.threadId !== undefined) out.threadId = notification.threadId;
  if (notification.pushType !== undefined) out.pushType = notification.pushType;
  if (notification.topic !== undefined) out.topic = notification.topic;
  if (notification.expiration !== undefined) out.expiration = notification.expiration;
  if (notification.priority !== undefined) out.priority = notification.priority;
  return out;
}

/**
 * Records every send before handing it on, so the log also shows pushes the seams then refuse
 * (a VoIP push failed by APNS_VOIP_FAILURE, then its alert fallback).
 */
export class CapturingSender implements ApnsSender {
  private readonly log: CaptureLog;

  constructor(
    private readonly inner: ApnsSender,
    path: string,
  ) {
    this.log = new CaptureLog(path);
  }

  async send(deviceToken: string, notification: ApnsNotification): Promise<ApnsResult> {
    await this.log.append(deviceToken, notification);
    return this.inner.send(deviceToken, notification);
  }

  async close(): Promise<void> {
    await this.log.flush();
    await this.inner.close();
  }
}
