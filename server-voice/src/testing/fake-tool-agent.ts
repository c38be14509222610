/**
 * A local stand-in for a model that calls client function tools, on the OpenAI-compatible streaming
 * `/v1/chat/completions` wire the gateway's `openai` agent speaks: for each tool-latency case (recognised by the
 * probe's fixed prompt) it issues the case's tool calls, reads the `role: "tool"` results the gateway sends back,
 * and answers. It reports every request and every abandoned stream, so a test waits for what it expects.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type ToolCase = 'dependent' | 'parallel' | 'mixed' | 'timeout' | 'cancel';

/** The prompt of each case: typed, or spoken and transcribed (the fake transcriber hears it exactly). */
export const TOOL_CASE_PROMPTS: Record<ToolCase, string> = {
  dependent: 'Take a probe seed, then scale that seed.',
  parallel: 'Read the probe clock and the probe moon.',
  mixed: 'Take a probe seed and try the broken probe.',
  timeout: 'Ask the slow probe.',
  cancel: 'Take a probe seed, then wait.',
};

/**
 * How the fake model misbehaves in `dependent` (the probe must reject each): the second call's argument wrong
 * or missing, or the calls out of order.
 */
export type ToolAgentFault = 'wrong_argument' | 'missing_argument' | 'out_of_order';

export interface FakeToolAgentOptions {
  fault?: ToolAgentFault;
}

export interface FakeToolAgent {
  /** Base URL with `/v1`. */
  baseUrl: string;
  /** The tool calls issued, as `name(arguments)`, in order. */
  calls: string[];
  /** Streams the gateway abandoned before the model finished (a cancelled turn). */
  readonly aborted: number;
  /** Resolves once `count` streams in all have been abandoned. */
  waitForAborts(count: number): Promise<void>;
  close(): Promise<void>;
}

interface Message {
  role?: string;
  content?: unknown;
  tool_call_id?: string;
}

interface Planned {
  name: string;
  arguments: Record<string, unknown>;
}

/** The next step of `toolCase` given the tool results so far: calls to make, text to say, or a stall. */
function nextStep(
  toolCase: ToolCase,
  results: unknown[],
  fault: ToolAgentFault | undefined,
): { calls: Planned[] } | { text: string[] } | { stall: true } {
  switch (toolCase) {
    case 'dependent': {
      if (fault === 'out_of_order' && results.length === 0) return { calls: [{ name: 'probe_scale', arguments: {} }] };
      if (results.length === 0) return { calls: [{ name: 'probe_seed', arguments: {} }] };
      if (results.length === 1) {
        const seed = (results[0] as { seed?: unknown }).seed;
        const args =
          fault === 'missing_argument'
            ? {}
            : { seed: fault === 'wrong_argument' && typeof seed === 'number' ? seed + 1 : seed };
        return { calls: [{ name: 'probe_scale', arguments: args }] };
      }
      const scaled = (results[1] as { scaled?: unknown }).scaled;
      return { text: ['The scaled seed ', `is ${String(scaled)}.`] };
    }
    case 'parallel':
      if (results.length === 0)
        return {
          calls: [
            { name: 'probe_clock', arguments: {} },
            { name: 'probe_moon', arguments: {} },
          ],
        };
      return { text: ['The clock and the moon ', 'both answered.'] };
    case 'mixed':
      if (results.length === 0)
        return {
          calls: [
            { name: 'probe_seed', arguments: {} },
            { name: 'probe_broken', arguments: {} },
          ],
        };
      return { text: ['The seed answered; ', 'the broken probe failed.'] };
    case 'timeout':
      if (results.length === 0) return { calls: [{ name: 'probe_slow', arguments: {} }] };
      return { text: ['The slow probe answered after all.'] };
    case 'cancel':
      if (results.length === 0) return { calls: [{ name: 'probe_seed', arguments: {} }] };
      // Still "thinking" after the first result: the client cancels the resumed response here.
      return { stall: true };
  }
}

function parseResult(content: unknown): unknown {
  try {
    return JSON.parse(String(content));
  } catch {
    return { text: String(content) };
  }
}

export async function startFakeToolAgent(options: FakeToolAgentOptions = {}): Promise<FakeToolAgent> {
  const state = { aborted: 0 };
  const abortWaiters: { count: number; resolve: () => void }[] = [];
  const abandoned = () => {
    state.aborted += 1;
    for (const waiter of abortWaiters.splice(0))
      if (state.aborted >= waiter.count) waiter.resolve();
      else abortWaiters.push(waiter);
  };
  const calls: string[] = [];
  let issued = 0;
  const server = http.createServer((request, response) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
        response.writeHead(404).end();
        return;
      }
      const { messages } = JSON.parse(Buffer.concat(chunks).toString()) as { messages: Message[] };
      // This turn: from the last user message on.
      let start = messages.length - 1;
      while (start > 0 && messages[start]?.role !== 'user') start -= 1;
      const prompt = String(messages[start]?.content ?? '');
      const toolCase = (Object.keys(TOOL_CASE_PROMPTS) as ToolCase[]).find((c) => TOOL_CASE_PROMPTS[c] === prompt);
      const results = messages
        .slice(start)
        .filter((m) => m.role === 'tool')
        .map((m) => parseResult(m.content));
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (delta: unknown, finish: string | null = null) =>
        response.write(
          `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
        );
      const step = toolCase ? nextStep(toolCase, results, options.fault) : { text: ['No probe case matched.'] };
      if ('stall' in step) {
        // Held open, writing nothing, until the gateway gives up on it.
        response.on('close', abandoned);
        return;
      }
      if ('text' in step) for (const piece of step.text) send({ content: piece });
      else {
        send({
          tool_calls: step.calls.map((call, index) => {
            calls.push(`${call.name}(${JSON.stringify(call.arguments)})`);
            return {
              index,
              id: `call_tool_${(issued += 1)}`,
              type: 'function',
              function: { name: call.name, arguments: JSON.stringify(call.arguments) },
            };
          }),
        });
        send({}, 'tool_calls');
      }
      response.end('data: [DONE]\n\n');
    })().catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    calls,
    get aborted() {
      return state.aborted;
    },
    waitForAborts: (count) =>
      state.aborted >= count ? Promise.resolve() : new Promise((resolve) => abortWaiters.push({ count, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
