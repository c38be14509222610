import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent, AgentTurn } from '../../src/agent/agent-backend.js';
import { OpenAiChatAgent } from '../../src/agent/openai-chat-agent.js';
import { startFakeUpstreams, type FakeUpstreams } from '../../src/testing/fake-upstreams.js';

let upstream: FakeUpstreams | null = null;
afterEach(async () => {
  await upstream?.close();
  upstream = null;
});

function turn(text: string, extra: Partial<AgentTurn> = {}): AgentTurn {
  return {
    sessionKey: 'room',
    text,
    instructions: '',
    tools: [],
    toolChoice: 'auto',
    signal: new AbortController().signal,
    callTool: () => Promise.reject(new Error('no tools')),
    ...extra,
  };
}

async function drain(generator: AsyncGenerator<AgentEvent, string, void>): Promise<string> {
  for (;;) {
    const step = await generator.next();
    if (step.done) return step.value;
  }
}

describe('captured frames reach an OpenAI-compatible agent', () => {
  it('as image_url parts of that turn’s user message only; the history keeps the words', async () => {
    upstream = await startFakeUpstreams({ reply: () => ['A red square.'] });
    const agent = new OpenAiChatAgent({ baseUrl: upstream.openAiBaseUrl, apiKey: 'k', model: 'm' });
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xd9]);
    await drain(agent.respond(turn('what is this?', { images: [{ mimeType: 'image/jpeg', data: jpeg }] })));
    expect(upstream.bodies[0]).toMatchObject({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${jpeg.toString('base64')}` } },
          ],
        },
      ],
    });
    await drain(agent.respond(turn('and now?')));
    expect(upstream.bodies[1]).toMatchObject({
      messages: [
        { role: 'user', content: 'what is this?' },
        { role: 'assistant', content: 'A red square.' },
        { role: 'user', content: 'and now?' },
      ],
    });
  });
});
