import { describe, expect, it } from 'vitest';
import { hookPayloadSchema, type HookPayload } from '../../src/bridge/hook-payload.js';
import { ManualClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { eventId } from '../../src/notifier/event-id.js';
import type { NotificationEvent } from '../../src/notifier/events.js';
import { Notifier, type ProfileScope } from '../../src/notifier/notifier.js';
import type { ReplySource } from '../../src/notifier/reply-source.js';
import { PERSONA_VOICE_NOTE, VOICE_LIVE_PREFIX } from '../../src/notifier/voice-note.js';

const profile: ProfileScope = { name: 'work', home: '/tmp/none' };

function harness(
  options: {
    titles?: Record<string, string>;
    muted?: string[];
    sourcesOff?: ReplySource[];
    /** The chats selected on Desktop; absent: the default file reader (no file here, so none). */
    desktop?: string[] | null;
  } = {},
) {
  const clock = new ManualClock();
  const sent: NotificationEvent[] = [];
  const approvals: string[] = [];
  const notifier = new Notifier({
    clock,
    log: silentLogger,
    pluginVersion: '0.1.0',
    replyHoldMs: 15_000,
    enqueue: (_p, event) => {
      sent.push(event);
      return true;
    },
    isCronMuted: async (_p, job) => (options.muted ?? []).includes(job),
    isReplySourceOn: async (_p, source) => !(options.sourcesOff ?? []).includes(source),
    sessionTitle: async (_p, sid) => options.titles?.[sid] ?? null,
    ...(options.desktop !== undefined
      ? { desktopSelection: async () => (options.desktop ? new Set(options.desktop) : null) }
      : {}),
    approvals: {
      // Delivery of an approval belongs to the approval cards; here it is recorded like any event.
      raised: (_p, payload, event) => {
        approvals.push(String(payload.extra?.session_key ?? ''));
        sent.push(event);
      },
      answered: () => {},
    },
    clarify: { ask: async () => null, settledNatively: () => {} },
  });
  const hook = (name: string, fields: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
    notifier.handle(
      profile,
      hookPayloadSchema.parse({ hook_event_name: name, profile: 'work', ...top, extra: fields }) as HookPayload,
    );
  return { clock, sent, approvals, notifier, hook };
}

async function turn(
  h: ReturnType<typeof harness>,
  sid: string,
  reply: string,
  end: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  await h.hook('pre_llm_call', {}, { session_id: sid });
  await h.hook('post_llm_call', { assistant_response: reply, turn_id: 't1', ...extra }, { session_id: sid });
  await h.hook('on_session_end', { turn_id: 't1', ...end, ...extra }, { session_id: sid });
}

describe('response ready only once the turn has ended', () => {
  const cases: { name: string; reply: string; end: Record<string, unknown>; expect: string[] }[] = [
    {
      name: 'a completed turn sends its reply',
      reply: 'Done: **3** files',
      end: { completed: true },
      expect: ['response.ready'],
    },
    { name: 'an exact [Silent] reply sends nothing', reply: '  [silent] ', end: { completed: true }, expect: [] },
    {
      name: 'a failed turn sends only its failure notice',
      reply: 'Error: 500 from provider',
      end: { completed: false },
      expect: ['turn.failed'],
    },
    { name: 'an interrupted turn sends nothing', reply: 'partial', end: { interrupted: true }, expect: [] },
    {
      name: '[Silent] in a sentence is content',
      reply: 'I stayed [Silent] then spoke',
      end: { completed: true },
      expect: ['response.ready'],
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const h = harness();
      await turn(h, 's1', c.reply, c.end);
      expect(h.sent.map((e) => e.type)).toEqual(c.expect);
    });
  }

  it('the reply body is plain text and the id is stable per turn and session', async () => {
    const h = harness();
    await turn(h, 's1', '# Result\n\n**Bold** and [link](https://x.test) `code`', { completed: true });
    expect(h.sent[0]).toMatchObject({
      event_id: eventId('response', 't1', 's1'),
      type: 'response.ready',
      session_id: 's1',
      profile: 'work',
      body: 'Result Bold and link code',
      plugin_version: '0.1.0',
    });
    expect(h.sent[0]?.title).toBeUndefined();
  });

  it('a reply whose turn never reports its end goes out after the hold', async () => {
    const h = harness();
    await h.hook('post_llm_call', { assistant_response: 'hi', turn_id: 't' }, { session_id: 's' });
    h.notifier.flushDueReplies();
    expect(h.sent).toEqual([]);
    h.clock.advance(15_001);
    h.notifier.flushDueReplies();
    expect(h.sent.map((e) => e.type)).toEqual(['response.ready']);
  });
});

describe('titles', () => {
  it('a reply shows the session title; other kinds prefix it; Bot Chat shows the profile name', async () => {
    const h = harness({ titles: { s1: 'Infra', bot: 'Bot Chat' } });
    await turn(h, 's1', 'ok', { completed: true });
    await turn(h, 's1', 'boom', { completed: false });
    await turn(h, 'bot', 'hello', { completed: true });
    await h.hook(
      'pre_approval_request',
      { session_key: 's1', description: 'rm -rf /tmp/x', turn_id: 't9' },
      { session_id: 's1' },
    );
    expect(h.sent.map((e) => [e.type, e.title])).toEqual([
      ['response.ready', 'Infra'],
      ['turn.failed', 'Turn failed · Infra'],
      ['response.ready', 'work'],
      ['approval.needed', 'Approval needed · Infra'],
    ]);
  });
});

describe('cron runs', () => {
  const cases: { name: string; reply: string; sends: boolean }[] = [
    { name: '[SILENT] as the whole reply', reply: '[SILENT]', sends: false },
    { name: 'SILENT as the whole reply', reply: 'SILENT', sends: false },
    { name: 'NO_REPLY as the whole reply', reply: ' NO_REPLY ', sends: false },
    { name: 'marker on its own first line', reply: '[SILENT]\nnothing new', sends: false },
    { name: 'marker on its own last line', reply: 'checked 4 feeds\nNO_REPLY', sends: false },
    { name: 'marker opening the reply', reply: '[SILENT] No changes since yesterday', sends: false },
    { name: 'marker mid-sentence is content', reply: 'The job said [SILENT] but found 2 alerts', sends: true },
    { name: 'a real report', reply: 'Disk at 91%', sends: true },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.sends ? 'notifies' : 'silent'}`, async () => {
      const h = harness();
      await turn(h, 'cron_abc123_20260101_090000', c.reply, { completed: true });
      expect(h.sent.length).toBe(c.sends ? 1 : 0);
    });
  }

  it('a muted job sends no reply and no failure notice, by task id or classic session id', async () => {
    const h = harness({ muted: ['job7'] });
    await turn(h, 'sess-x', 'report', { completed: true }, { task_id: 'cron:job7:1700000000' });
    await turn(h, 'cron_job7_20260101_090000', 'report', { completed: false });
    await turn(h, 'cron_other_20260101_090000', 'report', { completed: true });
    expect(h.sent.map((e) => e.session_id)).toEqual(['cron_other_20260101_090000']);
  });
});

describe('reply sources', () => {
  it('a source turned off sends no reply, but still its failures', async () => {
    const h = harness({ sourcesOff: ['terminal'] });
    await turn(h, 'a', 'cli reply', { completed: true }, { platform: 'cli' });
    await turn(h, 'b', 'tg reply', { completed: true }, { platform: 'telegram' });
    await turn(h, 'c', 'cli failed', { completed: false }, { platform: 'cli' });
    expect(h.sent.map((e) => [e.type, e.session_id])).toEqual([
      ['response.ready', 'b'],
      ['turn.failed', 'c'],
    ]);
  });
});

describe('being watched on Desktop (the two-minute rule)', () => {
  /** One turn whose reply comes `ms` after its pre_llm_call, then ends as `end` says. */
  async function timedTurn(
    h: ReturnType<typeof harness>,
    sid: string,
    ms: number,
    end: Record<string, unknown> = { completed: true },
    extra: Record<string, unknown> = {},
  ) {
    await h.hook('pre_llm_call', { turn_id: `t-${sid}`, ...extra }, { session_id: sid });
    h.clock.advance(ms);
    await h.hook('post_llm_call', { assistant_response: 'answer', turn_id: `t-${sid}`, ...extra }, { session_id: sid });
    await h.hook('on_session_end', { turn_id: `t-${sid}`, ...end, ...extra }, { session_id: sid });
  }

  it('a reply within two minutes in a chat selected on Desktop sends nothing; a longer turn still pushes', async () => {
    const h = harness({ desktop: ['open-chat'] });
    await timedTurn(h, 'open-chat', 119_000);
    await timedTurn(h, 'open-chat', 120_000);
    await timedTurn(h, 'open-chat', 120_001);
    expect(h.sent.map((e) => e.type)).toEqual(['response.ready']);
  });

  it('other chats, failures and cron runs push as before', async () => {
    const h = harness({ desktop: ['open-chat', 'cron_job1_20260101_090000'] });
    await timedTurn(h, 'other-chat', 5_000);
    await timedTurn(h, 'open-chat', 5_000, { completed: false });
    await timedTurn(h, 'cron_job1_20260101_090000', 5_000);
    expect(h.sent.map((e) => [e.type, e.session_id])).toEqual([
      ['response.ready', 'other-chat'],
      ['turn.failed', 'open-chat'],
      ['response.ready', 'cron_job1_20260101_090000'],
    ]);
  });

  it('a turn with no start time, or no trustworthy selection, pushes as before', async () => {
    const noStart = harness({ desktop: ['open-chat'] });
    await noStart.hook('post_llm_call', { assistant_response: 'hi', turn_id: 't' }, { session_id: 'open-chat' });
    await noStart.hook('on_session_end', { turn_id: 't', completed: true }, { session_id: 'open-chat' });
    const unknown = harness({ desktop: null });
    await timedTurn(unknown, 'open-chat', 1_000);
    const noFile = harness();
    await timedTurn(noFile, 'open-chat', 1_000);
    expect([noStart.sent.length, unknown.sent.length, noFile.sent.length]).toEqual([1, 1, 1]);
  });

  it("the two minutes run from the turn's first pre_llm_call, not its last model call", async () => {
    const h = harness({ desktop: ['open-chat'] });
    await h.hook('pre_llm_call', { turn_id: 'long' }, { session_id: 'open-chat' });
    h.clock.advance(100_000);
    await h.hook('pre_llm_call', { turn_id: 'long' }, { session_id: 'open-chat' });
    h.clock.advance(30_000);
    await h.hook('post_llm_call', { assistant_response: 'done', turn_id: 'long' }, { session_id: 'open-chat' });
    await h.hook('on_session_end', { turn_id: 'long', completed: true }, { session_id: 'open-chat' });
    expect(h.sent.map((e) => e.type)).toEqual(['response.ready']);
  });
});

describe('subagents and background tasks', () => {
  it('a child session sends nothing; a task ending inside its parent turn sends nothing; after it, one notice', async () => {
    const h = harness();
    await h.hook('pre_llm_call', {}, { session_id: 'parent' });
    await h.hook('subagent_start', { child_session_id: 'child1' });
    await turn(h, 'child1', 'child reply', { completed: true });
    await h.hook('subagent_stop', {
      child_session_id: 'child1',
      parent_session_id: 'parent',
      child_status: 'completed',
      child_summary: 'inside',
    });
    await h.hook('post_llm_call', { assistant_response: 'parent reply', turn_id: 'p1' }, { session_id: 'parent' });
    await h.hook('on_session_end', { completed: true, turn_id: 'p1' }, { session_id: 'parent' });
    await h.hook('subagent_start', { child_session_id: 'child2' });
    await h.hook('subagent_stop', {
      child_session_id: 'child2',
      parent_session_id: 'parent',
      parent_turn_id: 'p1',
      child_status: 'completed',
      child_summary: '**Indexed** 40 files',
    });
    await h.hook('subagent_start', { child_session_id: 'child3' });
    await h.hook('subagent_stop', { child_session_id: 'child3', parent_session_id: 'parent', parent_turn_id: 'p1' });
    expect(h.sent.map((e) => [e.type, e.session_id, e.body])).toEqual([
      ['response.ready', 'parent', 'parent reply'],
      ['background_task.finished', 'parent', 'Indexed 40 files'],
      ['background_task.finished', 'parent', 'A delegated task finished.'],
    ]);
  });
});

describe('approvals', () => {
  it('carries a decision card with the session key; smart approvals send nothing', async () => {
    const h = harness();
    await h.hook('pre_approval_request', {
      session_key: 'agent:main:s1',
      description: 'Run `rm -rf build`',
      turn_id: 't1',
      pattern_key: 'rm',
      command: 'rm -rf build',
    });
    await h.hook('pre_approval_request', { surface: 'smart', session_key: 'k', description: 'x' });
    await h.hook('pre_approval_request', { session_key: 'k2', turn_id: 't2' });
    expect(h.sent[0]).toMatchObject({
      type: 'approval.needed',
      event_id: eventId('approval', 'agent:main:s1', 't1', 'rm', 'rm -rf build'),
      body: 'Run `rm -rf build`',
      decision: {
        kind: 'approval',
        session_key: 'agent:main:s1',
        description: 'Run `rm -rf build`',
        choices: ['once', 'deny'],
      },
    });
    expect(h.sent[1]).toMatchObject({ body: 'Hermes is waiting for your approval.' });
    expect(h.sent[1]?.decision).toBeUndefined();
    expect(h.approvals).toEqual(['agent:main:s1', 'k2']);
    expect(h.sent).toHaveLength(2);
  });
});

describe('pre_llm_call', () => {
  it('adds the spoken-reply note only to a voice delegation', async () => {
    const h = harness();
    const voice = await h.hook('pre_llm_call', {
      conversation_history: [{ role: 'user', content: `${VOICE_LIVE_PREFIX}]\nwhat is on my calendar` }],
    });
    const typed = await h.hook('pre_llm_call', { conversation_history: [{ role: 'user', content: 'hello' }] });
    expect(voice).toEqual({ context: PERSONA_VOICE_NOTE });
    expect(typed).toBeNull();
  });
});
