import { describe, expect, it } from 'vitest';
import { hermesRunEvent, runCreated } from '../../src/hermes/runs.js';

describe('the Hermes run schemas', () => {
  it('reads every event SURFACES.md §1 lists, keeping the fields it does not declare', () => {
    const events = [
      { event: 'message.delta', run_id: 'r', timestamp: 1.5, delta: 'Hi' },
      { event: 'reasoning.delta', delta: 'hm' },
      { event: 'reasoning.available', text: 'because' },
      { event: 'tool.started', tool: 'search', preview: 'q' },
      { event: 'tool.completed', tool: 'search', duration: 0.25, error: false },
      { event: 'subagent.start' },
      { event: 'subagent.complete' },
      { event: 'approval.request', request_id: 'a1', command: 'rm ***', description: 'd', choices: ['once', 'deny'] },
      { event: 'run.completed', output: 'done', usage: { total_tokens: 3 } },
      { event: 'run.failed', error: 'boom' },
      { event: 'run.cancelled' },
    ];
    for (const event of events) expect(hermesRunEvent.parse(event)).toEqual(event);
  });

  it('a declared field of another type reads as absent, and the event is still read', () => {
    expect(hermesRunEvent.parse({ event: 'run.completed', output: null })).toEqual({
      event: 'run.completed',
      output: undefined,
    });
    expect(hermesRunEvent.parse({ event: 'run.failed', error: { code: 1 } })).toMatchObject({ error: undefined });
    expect(hermesRunEvent.parse({ event: 'approval.request', request_id: 7 })).toMatchObject({
      request_id: undefined,
    });
  });

  it('an event of another name, or without one, is not a run event', () => {
    expect(hermesRunEvent.safeParse({ event: 'hermes.someday' }).success).toBe(false);
    expect(hermesRunEvent.safeParse({ delta: 'x' }).success).toBe(false);
  });

  it('a run start answer needs a run id of 1 to 256 characters', () => {
    expect(runCreated.safeParse({ run_id: 'run_1', status: 'queued' }).success).toBe(true);
    expect(runCreated.safeParse({ run_id: '' }).success).toBe(false);
    expect(runCreated.safeParse({ run_id: 'r'.repeat(257) }).success).toBe(false);
    expect(runCreated.safeParse({ status: 'queued' }).success).toBe(false);
  });
});
