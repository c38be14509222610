import { describe, expect, it } from 'vitest';
import { planReply } from '../../src/messenger/outbound.js';

const buttons = (label: string) => '```buttons\n' + JSON.stringify([{ label }]) + '\n```';

describe('buttons blocks that stay in the words', () => {
  it('a second buttons block keeps both in the words, with the reason', () => {
    const answer = `Pick one.\n\n${buttons('Yes')}\n\nOr another.\n\n${buttons('No')}`;
    const plan = planReply(answer);
    expect(plan.refusals).toEqual(['send one buttons block per answer']);
    expect(plan.messages.flatMap((m) => m.parts).some((p) => p.type === 'buttons')).toBe(false);
    expect(JSON.stringify(plan.messages)).toContain('Yes');
    expect(JSON.stringify(plan.messages)).toContain('No');
  });

  it('buttons beside only a link stay in the words, with the reason', () => {
    const plan = planReply(`https://example.com/report\n\n${buttons('Open')}`);
    expect(plan.refusals).toEqual(['buttons cannot be sent beside only a link']);
    expect(plan.messages.flatMap((m) => m.parts).some((p) => p.type === 'buttons')).toBe(false);
  });

  it('one buttons block beside a question is still lifted', () => {
    const plan = planReply(`Shall I go on?\n\n${buttons('Yes')}`);
    expect(plan.refusals).toEqual([]);
    expect(plan.messages[0]?.parts.map((p) => p.type)).toEqual(['text', 'buttons']);
  });
});
