/**
 * Every bound of the Watch audio host side (ROUTES.md and CRYPTO.md, Watch audio; the seed), with why
 * it is what it is.
 */
export const WATCH_AUDIO_LIMITS = {
  /** A host holds at most 4 Watch calls at once (the seed): each is a billed provider session. */
  callsPerHost: 4,
  /** Prepares host-wide per window (ROUTES.md): loading the runtime is cheap here, but the app must not loop. */
  preparesPerWindow: 5,
  preparesWindowMs: 300_000,
  /** Stream ids remembered per grant: a reused sid is ignored, and a call reconnects only a few times. */
  sidsRemembered: 64,
  /** The relay must take the host's socket within this. */
  relayConnectTimeoutMs: 15_000,
  /** After the relay socket drops: waits double from this up to the cap, so a relay restart is ridden out. */
  redialBaseMs: 1000,
  redialMaxMs: 15_000,
  /** The relay closes a socket silent for 60 s (WATCH_AUDIO_IDLE_MS); a ping this often keeps a quiet grant open. */
  keepAliveMs: 20_000,
  /** A closed grant's relay socket is left for the relay to close (4010, after the host's DELETE) this long. */
  closeGraceMs: 3000,
  /** The provider must answer (xAI's handshake, the SDP exchange and the events channel) within this. */
  engineConnectTimeoutMs: 15_000,
  /**
   * Audio queued on the relay socket past this is dropped rather than sent late: a call that far behind
   * is better caught up than played a second behind the speaker.
   */
  relayBacklogBytes: 512 * 1024,
  /** The Watch's microphone rate, and the rate each engine's replies come down at (CRYPTO.md §5's config). */
  inputRateHz: 16_000,
  outputRateHz: 24_000,
  /**
   * Grok sends a reply's audio faster than real time; it goes to the Watch at real time plus this lead,
   * enough to ride out the relay's jitter, little enough that barging in drops what's left at once.
   */
  grokLeadMs: 240,
  /** Grok's reply audio goes down in chunks of this length (a sealed message each). */
  grokChunkMs: 40,
  /** A control message from the Watch (start carries the briefing and history). */
  controlMaxBytes: 60_000,
  /** History items passed to GPT-Live, as the phone's session route keeps. */
  historyItems: 40,
  briefingMaxChars: 32_768,
  greetingMaxChars: 200,
} as const;
