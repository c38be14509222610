import { VideoBufferType, VideoStream, type RemoteTrack, type VideoFrame } from '@livekit/rtc-node';
import sharp from 'sharp';

/** How long `conference.capture_frame` waits for a first frame from the sender's camera. */
export const FRAME_WAIT_MS = 2_000;
/** JPEG quality of a captured frame (CONTRACT.md §4, frame capture). */
export const JPEG_QUALITY = 85;

export type FrameFailure = 'no-video-track' | 'timeout' | 'encode-error';

/** A captured camera frame, encoded, waiting to be attached to the next user message. */
export interface CapturedFrame {
  identity: string;
  width: number;
  height: number;
  jpeg: Buffer;
  /** ISO-8601 UTC. */
  timestamp: string;
}

/** A frame as JPEG (quality 85), converted to packed RGB24 first whatever the decoder produced. */
export async function encodeJpeg(frame: VideoFrame): Promise<{ jpeg: Buffer; width: number; height: number }> {
  const rgb = frame.type === VideoBufferType.RGB24 ? frame : frame.convert(VideoBufferType.RGB24);
  const { width, height, data } = rgb;
  if (width <= 0 || height <= 0 || data.byteLength < width * height * 3) throw new Error('unexpected RGB24 layout');
  const pixels = Buffer.from(data.buffer, data.byteOffset, width * height * 3);
  const jpeg = await sharp(pixels, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: JPEG_QUALITY })
    .toBuffer();
  return { jpeg, width, height };
}

interface Watched {
  trackSid: string;
  latest: VideoFrame | null;
  waiters: Set<(frame: VideoFrame) => void>;
  stop: () => void;
}

/**
 * The newest decoded frame of each participant's camera: every subscribed video track is read continuously
 * and only the latest frame is kept, so an idle camera neither queues frames nor makes a later snapshot stale.
 */
export class FrameGrabber {
  private readonly watched = new Map<string, Watched>();

  watch(identity: string, trackSid: string, track: RemoteTrack): void {
    if (this.watched.get(identity)?.trackSid === trackSid) return;
    this.unwatch(identity);
    const reader = new VideoStream(track).getReader();
    let stopped = false;
    const entry: Watched = {
      trackSid,
      latest: null,
      waiters: new Set(),
      stop: () => {
        stopped = true;
        void reader.cancel().catch(() => undefined);
      },
    };
    this.watched.set(identity, entry);
    void (async () => {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch {
          return;
        }
        if (next.done || stopped) return;
        entry.latest = next.value.frame;
        for (const waiter of [...entry.waiters]) waiter(next.value.frame);
        entry.waiters.clear();
      }
    })();
  }

  /** Stops reading a participant's camera (all of it, or only when it is that track). */
  unwatch(identity: string, trackSid?: string): void {
    const entry = this.watched.get(identity);
    if (!entry || (trackSid !== undefined && entry.trackSid !== trackSid)) return;
    entry.stop();
    this.watched.delete(identity);
  }

  /** The sender's newest frame (or the first within `waitMs`), encoded; or why there is none. */
  async capture(identity: string, waitMs = FRAME_WAIT_MS): Promise<CapturedFrame | { failure: FrameFailure }> {
    const entry = this.watched.get(identity);
    if (!entry) return { failure: 'no-video-track' };
    const frame =
      entry.latest ??
      (await new Promise<VideoFrame | null>((resolve) => {
        const timer = setTimeout(() => {
          entry.waiters.delete(waiter);
          resolve(null);
        }, waitMs);
        const waiter = (first: VideoFrame): void => {
          clearTimeout(timer);
          resolve(first);
        };
        entry.waiters.add(waiter);
      }));
    if (!frame) return { failure: 'timeout' };
    try {
      const { jpeg, width, height } = await encodeJpeg(frame);
      return { identity, width, height, jpeg, timestamp: new Date().toISOString() };
    } catch {
      return { failure: 'encode-error' };
    }
  }

  close(): void {
    for (const identity of [...this.watched.keys()]) this.unwatch(identity);
  }
}
