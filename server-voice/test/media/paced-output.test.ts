import { describe, expect, it } from 'vitest';
import { FRAME_SAMPLES } from '../../src/audio/types.js';
import { ManualFrameClock, SharedFrameClock } from '../../src/media/frame-clock.js';
import { MAX_QUEUED_FRAMES, PacedOutput } from '../../src/media/paced-output.js';
import { OpusDecoder, OpusEncoder } from '../../src/media/opus-codec.js';

const tone = (value: number) => new Int16Array(FRAME_SAMPLES).fill(value);

function recorder() {
  const clock = new ManualFrameClock();
  const sent: { value: number; silent: boolean }[] = [];
  const output = new PacedOutput(clock, (frame, info) => sent.push({ value: frame[0] ?? 0, silent: info.silent }));
  output.start();
  return { clock, sent, output };
}

describe('PacedOutput', () => {
  it('sends one frame per 20 ms tick: silence when idle, queued speech in order, then silence again', async () => {
    const { clock, sent, output } = recorder();
    clock.advance(40);
    await output.write(tone(1), output.epoch);
    await output.write(tone(2), output.epoch);
    clock.advance(80);
    expect(sent).toEqual([
      { value: 0, silent: true },
      { value: 0, silent: true },
      { value: 1, silent: false },
      { value: 2, silent: false },
      { value: 0, silent: true },
      { value: 0, silent: true },
    ]);
  });

  it("sends a reply's first frame at once when idle, in place of the next tick's frame (no extra frame, no burst)", async () => {
    const clock = new ManualFrameClock();
    const sent: { value: number; at: number }[] = [];
    const output = new PacedOutput(clock, (frame, info) => sent.push({ value: frame[0] ?? 0, at: info.deadlineMs }));
    output.start();
    // Before the first tick nothing has been sent yet, so there is no slot to take: the frame waits.
    await output.write(tone(1), output.epoch);
    expect(sent).toEqual([]);
    clock.advance(40);
    expect(sent).toEqual([
      { value: 1, at: 20 },
      { value: 0, at: 40 },
    ]);
    // Idle (the last tick sent silence): the next reply's first frame leaves now, not at the next tick.
    await output.write(tone(2), output.epoch);
    await output.write(tone(3), output.epoch);
    expect(sent.at(-1)).toEqual({ value: 2, at: 40 });
    clock.advance(60);
    // Tick 60 was taken by the early frame; the rest keeps the 20 ms grid.
    expect(sent.slice(2)).toEqual([
      { value: 2, at: 40 },
      { value: 3, at: 80 },
      { value: 0, at: 100 },
    ]);
    expect(output.speechFramesSent).toBe(3);
  });

  it('holds at most 500 ms ahead: the 26th write waits until a frame is sent', async () => {
    const { clock, output } = recorder();
    for (let i = 0; i < MAX_QUEUED_FRAMES; i += 1) await output.write(tone(i + 1), output.epoch);
    expect(output.queuedFrames).toBe(25);
    let accepted = false;
    const blocked = output.write(tone(99), output.epoch).then((ok) => (accepted = ok));
    await Promise.resolve();
    expect(accepted).toBe(false);
    clock.advance(20);
    await blocked;
    expect(accepted).toBe(true);
    expect(output.queuedFrames).toBe(25);
  });

  it('clear() drops queued speech at once and a blocked producer gives up', async () => {
    const { clock, sent, output } = recorder();
    const epoch = output.epoch;
    for (let i = 0; i < MAX_QUEUED_FRAMES; i += 1) await output.write(tone(5), epoch);
    const blocked = output.write(tone(6), epoch);
    output.clear();
    await expect(blocked).resolves.toBe(false);
    await expect(output.write(tone(7), epoch)).resolves.toBe(false);
    clock.advance(20);
    expect(sent.at(-1)).toEqual({ value: 0, silent: true });
    await expect(output.drained()).resolves.toBeUndefined();
  });

  it('drained() resolves when the last queued frame is sent', async () => {
    const { clock, output } = recorder();
    await output.write(tone(1), output.epoch);
    await output.write(tone(1), output.epoch);
    let drained = false;
    const done = output.drained().then(() => (drained = true));
    clock.advance(20);
    await Promise.resolve();
    expect(drained).toBe(false);
    clock.advance(20);
    await done;
    expect(drained).toBe(true);
  });
});

describe('SharedFrameClock', () => {
  it('ticks every 20 ms and, after a stall, resumes from now instead of bursting the missed ticks', async () => {
    let now = 0;
    const clock = new SharedFrameClock(() => now);
    const ticks: number[] = [];
    const real = { setTimeout: globalThis.setTimeout };
    const scheduled: (() => void)[] = [];
    globalThis.setTimeout = ((fn: () => void) => {
      scheduled.push(fn);
      return { unref() {} } as unknown as NodeJS.Timeout;
    }) as typeof setTimeout;
    try {
      const stop = clock.subscribe((deadline) => ticks.push(deadline));
      const fire = (at: number) => {
        now = at;
        scheduled.shift()?.();
      };
      fire(20);
      fire(40);
      fire(200); // the process stalled for 140 ms
      fire(220);
      expect(ticks).toEqual([20, 40, 200, 220]);
      stop();
    } finally {
      globalThis.setTimeout = real.setTimeout;
    }
  });

  it('precise (the media sender): never ticks before its deadline, though Node timers can fire early', async () => {
    const clock = new SharedFrameClock(() => performance.now(), { precise: true });
    const ticks: number[] = [];
    // Taken before subscribing, so it is no later than the clock's own start.
    const start = performance.now();
    const done = new Promise<void>((resolve) => {
      const stop = clock.subscribe(() => {
        ticks.push(performance.now());
        if (ticks.length === 25) {
          stop();
          resolve();
        }
      });
    });
    await done;
    // The k-th tick is due at start + 20·k ms (deadlines advance by exactly 20 ms while nothing stalls).
    for (const [k, at] of ticks.entries()) expect(at - (start + 20 * (k + 1))).toBeGreaterThanOrEqual(-0.05);
  });
});

describe('SharedFrameClock pacing figures', () => {
  it('reports |interval − 20 ms| between ticks as sent, and resets after each report', () => {
    let now = 0;
    const clock = new SharedFrameClock(() => now);
    const real = { setTimeout: globalThis.setTimeout };
    const scheduled: (() => void)[] = [];
    globalThis.setTimeout = ((fn: () => void) => {
      scheduled.push(fn);
      return { unref() {} } as unknown as NodeJS.Timeout;
    }) as typeof setTimeout;
    try {
      // The second listener takes 3 ms on the third tick: the last call's frame leaves late there.
      let slow = false;
      const stopA = clock.subscribe(() => undefined);
      const stopB = clock.subscribe(() => {
        if (slow) now += 3;
      });
      for (const at of [20, 40, 66, 86]) {
        now = at;
        slow = at === 66;
        scheduled.shift()?.();
      }
      const stats = clock.takePacingStats();
      expect(stats).toMatchObject({
        intervals: 3,
        first_jitter_p99_ms: 6,
        last_jitter_p99_ms: 9,
        last_jitter_max_ms: 9,
      });
      expect(stats).toMatchObject({ first_jitter_p50_ms: 0, last_jitter_p50_ms: 3 });
      expect(clock.takePacingStats()).toBeNull();
      stopA();
      stopB();
    } finally {
      globalThis.setTimeout = real.setTimeout;
    }
  });
});

describe('SharedFrameClock pacing figures across calls', () => {
  it('does not count the idle time between two calls (the clock stopped) as jitter', () => {
    let now = 0;
    const clock = new SharedFrameClock(() => now);
    const real = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout };
    const scheduled: (() => void)[] = [];
    globalThis.setTimeout = ((fn: () => void) => {
      scheduled.push(fn);
      return { unref() {} } as unknown as NodeJS.Timeout;
    }) as typeof setTimeout;
    globalThis.clearTimeout = (() => scheduled.splice(0)) as typeof clearTimeout;
    try {
      const tick = (at: number) => {
        now = at;
        scheduled.shift()?.();
      };
      // One call: three ticks, then it hangs up and the clock stops.
      const first = clock.subscribe(() => undefined);
      for (const at of [20, 40, 60]) tick(at);
      first();
      // The next call starts 26.7 s later (the figure operators saw as "jitter").
      now = 26_765;
      const second = clock.subscribe(() => undefined);
      for (const at of [26_785, 26_805, 26_826]) tick(at);
      second();
      expect(clock.takePacingStats()).toEqual({
        intervals: 4,
        first_jitter_p50_ms: 0,
        first_jitter_p99_ms: 1,
        last_jitter_p50_ms: 0,
        last_jitter_p99_ms: 1,
        last_jitter_max_ms: 1,
      });
    } finally {
      globalThis.setTimeout = real.setTimeout;
      globalThis.clearTimeout = real.clearTimeout;
    }
  });
});

describe('Opus codec', () => {
  it('round-trips 20 ms of 48 kHz mono speech-band audio', () => {
    const encoder = new OpusEncoder();
    const decoder = new OpusDecoder();
    const frame = new Int16Array(FRAME_SAMPLES);
    let decoded: Int16Array = new Int16Array(0);
    for (let n = 0; n < 5; n += 1) {
      for (let i = 0; i < FRAME_SAMPLES; i += 1)
        frame[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (n * FRAME_SAMPLES + i)) / 48000));
      decoded = decoder.decode(encoder.encode(frame));
    }
    expect(decoded.length).toBe(FRAME_SAMPLES);
    const peak = decoded.reduce((max, s) => Math.max(max, Math.abs(s)), 0);
    expect(peak).toBeGreaterThan(5000);
    expect(() => decoder.decode(Buffer.from([0xff, 0xff, 0xff]))).toThrow();
    encoder.close();
    decoder.close();
  });
});
