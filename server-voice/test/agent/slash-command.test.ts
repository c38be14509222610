import { describe, expect, it } from 'vitest';
import { spokenCommand, typedCommand } from '../../src/agent/slash-command.js';

describe('typed slash commands', () => {
  it('a user message starting with /name is a command; its arguments are kept as typed', () => {
    expect(typedCommand('/reasoning low')).toEqual({ name: 'reasoning', args: 'low', text: '/reasoning low' });
    expect(typedCommand('  /Model gpt-5.6-terra --provider openai-codex --session ')).toEqual({
      name: 'model',
      args: 'gpt-5.6-terra --provider openai-codex --session',
      text: '/model gpt-5.6-terra --provider openai-codex --session',
    });
    expect(typedCommand('/help')).toEqual({ name: 'help', args: '', text: '/help' });
    // Typed input may name any command: Hermes decides what it is.
    expect(typedCommand('/my-skill now')?.name).toBe('my-skill');
  });

  it('ordinary text, paths and a lone slash are not commands', () => {
    for (const text of ['what is /reasoning?', '/usr/bin is where?', '/ spaced', '/', '//comment', '/1st'])
      expect(typedCommand(text), text).toBeNull();
  });
});

describe('spoken slash commands', () => {
  it('"slash" followed at once by a Hermes command is that command, without the transcriber\'s full stop', () => {
    expect(spokenCommand('Slash reasoning low.')).toEqual({ name: 'reasoning', args: 'low', text: '/reasoning low' });
    expect(spokenCommand('slash, model GPT-5.6 Terra')).toEqual({
      name: 'model',
      args: 'GPT-5.6 Terra',
      text: '/model GPT-5.6 Terra',
    });
    expect(spokenCommand('SLASH HELP!')).toEqual({ name: 'help', args: '', text: '/help' });
    // A transcriber that writes the slash itself.
    expect(spokenCommand('/reasoning medium.')).toEqual({
      name: 'reasoning',
      args: 'medium',
      text: '/reasoning medium',
    });
  });

  it('ordinary speech never becomes a command', () => {
    for (const said of [
      'Slash the budget by half.',
      'Can you slash reasoning costs?',
      'I said slash model.',
      'Slash.',
      'Slashing prices now',
      'slash my-skill please',
      'reasoning low',
      'The model slash reasoning setting.',
      '',
    ])
      expect(spokenCommand(said), said).toBeNull();
  });
});
