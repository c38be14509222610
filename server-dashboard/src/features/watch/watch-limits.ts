/**
 * Every bound of the Watch tools host side (ROUTES.md and CRYPTO.md, Watch tools), with why it is
 * what it is.
 */
export const WATCH_LIMITS = {
  /** A grant lives as long as one Watch call may reasonably last; the relay closes it then too. */
  grantTtlS: 1800,
  /** Calls over a grant's life without jobs: a lookup every 30 s of a half-hour call. */
  maxCallsWithoutJobs: 60,
  /** With jobs the Watch also asks for job news (finished jobs, approvals) while they run. */
  maxCallsWithJobs: 120,
  /** Grants one profile may open a minute: a call renews once or twice, never more. */
  grantsPerMinute: 10,
  /** Live grants per profile: a call and its renewal; a third means the oldest call is over. */
  liveGrantsPerProfile: 2,
  /** The grant and revoke bodies are a handful of fields. */
  bodyLimitBytes: 2048,
  /** Jobs per call when the phone says nothing, and the most it may ask for. */
  defaultMaxJobs: 5,
  maxMaxJobs: 20,
  /** Other profiles a call's jobs may run on. */
  maxJobProfiles: 32,
  /** The relay holds a poll this long at most; asking for longer is capped there anyway. */
  pollWaitMs: 25_000,
  /** A poll is given up after the relay's hold plus room for a slow network. */
  pollTimeoutMs: 40_000,
  /** Opening, answering and closing are quick exchanges. */
  relayTimeoutMs: 15_000,
  /** After a failed poll: waits double from this up to the cap, so a relay restart is ridden out. */
  pollRetryBaseMs: 1000,
  pollRetryMaxMs: 15_000,
  /** A call's plaintext JSON; the relay caps sealed calls at 5,483 characters to match. */
  maxCallBytes: 4096,
  /** A sealed answer's ciphertext, in base64url characters (the relay refuses more). */
  maxResultCtChars: 24_000,
  /** rids remembered per grant to drop repeats: more than a grant's calls can ever be. */
  ridsRemembered: 256,
  /**
   * Gemini Live tokens one grant mints (the seed): enough for a call whose Gemini session broke a few
   * times, never a supply. Only a mint whose answer reached the relay counts, so a failure or a lost
   * answer leaves the Watch its retry; a renewal counts its own. The phone route's 20 a minute per
   * profile applies as well, shared with it.
   */
  liveTokensPerGrant: 6,
  /** A spoken query is a phrase or a sentence; longer is not a search the voice model meant. */
  chatQueryChars: 200,
  /** Chats one find_chat answers: a voice model reads them out, so a handful, newest first. */
  chatsPerSearch: 8,
  /** Words a query that matched nothing whole is retried by, one search each. */
  chatSearchWords: 8,
  /** The shortest word tried alone: "a", "to" and "of" match nearly every chat and say nothing. */
  chatSearchWordMinChars: 3,
  /** Characters of an untitled chat's first words shown in place of its title. */
  chatOpeningChars: 80,
  /** Rows read of a chat: its newest 500, as the seed reads Hermes' messages route. */
  chatRowsRead: 500,
  /** One message's characters read from the store: a pasted file is not read whole into a Watch call. */
  chatMessageChars: 4000,
  /**
   * A read chat's text, in UTF-8 bytes of its JSON string: well inside a sealed answer's 24,000
   * characters (about 18 KB of plaintext), with room for the title and the envelope.
   */
  chatAnswerBytes: 12_000,
  /**
   * Jobs of one call running at once (the seed): a Watch call is a conversation, not a batch queue, and
   * each running job may ask for approvals the user answers by voice.
   */
  jobsAtOnce: 3,
  /**
   * A start Hermes has not accepted in this long is answered accepted (the seed): the relay holds the
   * Watch's call 25 s, so the answer must leave well inside it; a start that then fails comes as news.
   */
  jobAcceptMs: 18_000,
  /**
   * Times a start that got no answer is asked again (same Idempotency-Key, so Hermes re-attaches it):
   * the client gives up after 15 s, sooner than Hermes may take to accept a run while it is busy.
   */
  jobStartAttempts: 3,
  /** A spoken task: a few sentences; more is not something said into a Watch. */
  jobTaskChars: 4000,
  /** A follow-up's words (interrupt_job), as long as a task. */
  jobFollowUpChars: 4000,
  /** A job's title, shown on the Watch and in Conduit's Voice Jobs. */
  jobTitleChars: 80,
  /** A finished job's result carried in its news: read out on the Watch; the chat holds the rest. */
  jobResultChars: 1500,
  /** A result's opening shown by list_jobs, so a list of twenty jobs still fits one sealed answer. */
  jobListResultChars: 200,
  /** News items one answer carries (each result at most 1,500 characters, well inside 24,000 sealed). */
  jobNewsPerAnswer: 6,
  /** News one call keeps unheard; past it the oldest finished-job news goes (approvals stay). */
  jobNewsKept: 64,
} as const;
