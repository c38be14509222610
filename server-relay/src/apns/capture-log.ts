import { appendFile, chmod, mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ApnsNotification, ApnsResult, ApnsSender } from './types.js';

/**
 * APNS_CAPTURE_PATH: every push APNs took appended as one JSON line `{deviceToken, notification}`,
 * shaped like the reference's lines (client developers diff these files in their own tests), so
 * operators and client developers can see exactly what the relay pushed. The file holds device tokens
 * and payloads, hence mode 0600.
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

/**
 * The captured shape: only the documented fields, absent ones left out, in the reference's key order
 * (an alert `{collapseId, payload, threadId}` with no pushType; a VoIP push `{payload, pushType,
 * topic, expiration}`), so a line reads the same byte for byte.
 */
function captured(notification: ApnsNotification): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (notification.collapseId !== undefined) out.collapseId = notification.collapseId;
  out.payload = notification.payload;
  if (notification.threadId !== undefined) out.threadId = notification.threadId;
  if (notification.pushType !== undefined) out.pushType = notification.pushType;
  if (notification.topic !== undefined) out.topic = notification.topic;
  if (notification.expiration !== undefined) out.expiration = notification.expiration;
  if (notification.priority !== undefined) out.priority = notification.priority;
  return out;
}

/**
 * Records each push once APNs (or the seam standing in for it) took it. As in the reference, a push
 * that was refused (a VoIP push failed by APNS_VOIP_FAILURE, everything under APNS_MODE=reject) or
 * never answered is not written: the file lists what was delivered, and a refused VoIP push shows up
 * as the alert it fell back to.
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
    const result = await this.inner.send(deviceToken, notification);
    // Written before the caller learns the result, so a reply the relay sends afterwards never
    // races its own capture line.
    if (result.ok) await this.log.append(deviceToken, notification);
    return result;
  }

  async close(): Promise<void> {
    await this.log.flush();
    await this.inner.close();
  }
}
