/**
 * Local stand-ins for the services this machine cannot reach, speaking their documented wire: an
 * OpenAI-compatible server (`/v1/chat/completions` streaming SSE, `/v1/audio/transcriptions`,
 * `/v1/audio/speech` streaming raw 24 kHz PCM) and the Hermes API server's runs (`/v1/runs`, its SSE
 * events, `/stop`) and its client-tools chat completions (the same `/v1/chat/completions`, as Hermes serves it:
 * `tool_calls` for a client tool, the answer once the `role: "tool"` result comes back in the same
 * `X-Hermes-Session-Id` session, a 400 when `client_tools` is off). Tests, the latency probe and the benchmark
 * use them; they are instant unless told not to be.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatToolCall {
  name: string;
  arguments: string;
}

export interface FakeUpstreamOptions {
  /** Transcript for an uploaded utterance (the WAV bytes are given). */
  transcript?: (wav: Buffer) => string;
  /** The assistant's reply to the conversation so far (chat) or the run input (Hermes), in streamed pieces. */
  reply?: (lastUserText: string, messages: unknown[]) => string[] | { toolCall: ChatToolCall };
  /** Milliseconds of speech per character for the fake speech endpoint (default 3). */
  speechMsPerChar?: number;
  /** Bearer key the fakes require (default none). */
  apiKey?: string;
  /**
   * Hermes' `gateway.platforms.api_server.client_tools` (default on): off, a chat request with `tools` is
   * answered 400 as Hermes refuses it.
   */
  hermesClientTools?: boolean;
}

export interface FakeUpstreams {
  /** Base URL with `/v1` (OpenAI-compatible clients). */
  openAiBaseUrl: string;
  /** Server root (the Hermes API server). */
  hermesBaseUrl: string;
  /** Every request seen, as `METHOD path`. */
  requests: string[];
  /** Request bodies of `/v1/chat/completions` and `/v1/runs`. */
  bodies: unknown[];
  /** The `X-Hermes-Session-Id` of each `/v1/chat/completions` request (null without one), in order. */
  chatSessions: (string | null)[];
  stopped: string[];
  close(): Promise<void>;
}

async function readBody(request: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function lastUserText(messages: unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const message = messages[i] as { role?: unknown; content?: unknown };
    if (message.role === 'user' && typeof message.content === 'string') return message.content;
  }
  return '';
}

function headerValue(value: string | string[] | undefined): string | null {
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

/** Whether the assistant message just before the trailing tool results called `callId`. */
function answersCall(messages: unknown[], callId: string): boolean {
  let i = messages.length - 1;
  while (i >= 0 && (messages[i] as { role?: unknown }).role === 'tool') i -= 1;
  const assistant = messages[i] as { role?: unknown; tool_calls?: { id?: unknown }[] } | undefined;
  return assistant?.role === 'assistant' && (assistant.tool_calls ?? []).some((call) => call.id === callId);
}

/** 24 kHz PCM16 speech stand-in: a 220 Hz tone whose length follows the text. */
export function fakeSpeechPcm(text: string, msPerChar: number): Buffer {
  const samples = Math.round((24_000 * Math.max(200, text.length * msPerChar)) / 1000);
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i += 1)
    pcm.writeInt16LE(Math.round(9000 * Math.sin((2 * Math.PI * 220 * i) / 24_000)), i * 2);
  return pcm;
}

export async function startFakeUpstreams(options: FakeUpstreamOptions = {}): Promise<FakeUpstreams> {
  const requests: string[] = [];
  const bodies: unknown[] = [];
  const stopped: string[] = [];
  const chatSessions: (string | null)[] = [];
  /** Each tool call handed out, with the session it belongs to: a result must come back in the same one. */
  const issuedCalls = new Map<string, string | null>();
  const runs = new Map<string, string>();
  let runCount = 0;
  const reply = options.reply ?? ((text: string) => ['You said: ', text, '.']);
  const server = http.createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', 'http://fake');
      requests.push(`${request.method} ${url.pathname}`);
      if (options.apiKey && request.headers.authorization !== `Bearer ${options.apiKey}`) {
        response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"bad key"}}');
        return;
      }
      const body = await readBody(request);
      if (request.method === 'POST' && url.pathname === '/v1/audio/transcriptions') {
        const transcript = options.transcript?.(body) ?? 'hello from the fake transcriber';
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: transcript }));
        return;
      }
      if (request.method === 'POST' && url.pathname === '/v1/audio/speech') {
        const { input } = JSON.parse(body.toString()) as { input: string };
        const pcm = fakeSpeechPcm(input, options.speechMsPerChar ?? 3);
        response.writeHead(200, { 'content-type': 'audio/pcm' });
        // Odd-sized chunks, as a real server's HTTP chunking would split samples.
        for (let offset = 0; offset < pcm.length; offset += 4801) response.write(pcm.subarray(offset, offset + 4801));
        response.end();
        return;
      }
      if (request.method === 'POST' && url.pathname === '/v1/chat/completions') {
        const parsed = JSON.parse(body.toString()) as { messages: unknown[]; tools?: unknown[] };
        bodies.push(parsed);
        const session = headerValue(request.headers['x-hermes-session-id']);
        chatSessions.push(session);
        const refuse = (message: string) =>
          response
            .writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { message, type: 'invalid_request_error' } }));
        if (options.hermesClientTools === false && parsed.tools) {
          refuse('client tools are disabled on this API server');
          return;
        }
        const last = parsed.messages.at(-1) as { role?: string; tool_call_id?: string } | undefined;
        if (last?.role === 'tool') {
          const known = issuedCalls.has(last.tool_call_id ?? '');
          if (!known || issuedCalls.get(last.tool_call_id ?? '') !== session) {
            refuse('tool result for a call this session was not given');
            return;
          }
          if (!answersCall(parsed.messages, last.tool_call_id ?? '')) {
            refuse('a tool result must follow the assistant message that called it');
            return;
          }
        }
        const answer =
          last?.role === 'tool'
            ? ['The tool said ', String((last as { content?: unknown }).content), '.']
            : reply(lastUserText(parsed.messages), parsed.messages);
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        const chunk = (delta: unknown) =>
          response.write(
            `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta }] })}\n\n`,
          );
        if (Array.isArray(answer)) for (const piece of answer) chunk({ content: piece });
        else {
          const callId = `call_fake_${issuedCalls.size + 1}`;
          issuedCalls.set(callId, session);
          chunk({
            tool_calls: [
              {
                index: 0,
                id: callId,
                type: 'function',
                function: { name: answer.toolCall.name, arguments: answer.toolCall.arguments },
              },
            ],
          });
          response.write(
            `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] })}\n\n`,
          );
        }
        response.end('data: [DONE]\n\n');
        return;
      }
      if (request.method === 'POST' && url.pathname === '/v1/runs') {
        const parsed = JSON.parse(body.toString()) as { input: string };
        bodies.push(parsed);
        runCount += 1;
        const id = `run_${runCount}`;
        runs.set(id, parsed.input);
        response
          .writeHead(202, { 'content-type': 'application/json' })
          .end(JSON.stringify({ run_id: id, status: 'queued' }));
        return;
      }
      const events = /^\/v1\/runs\/([^/]+)\/events$/.exec(url.pathname);
      if (request.method === 'GET' && events) {
        const input = runs.get(events[1] ?? '');
        if (input === undefined) {
          response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"run_not_found"}');
          return;
        }
        const answer = reply(input, []);
        const pieces = Array.isArray(answer) ? answer : ['(tool call)'];
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(': keepalive\n\n');
        let id = 0;
        for (const delta of pieces)
          response.write(
            `id: ${++id}\ndata: ${JSON.stringify({ event: 'message.delta', run_id: events[1], delta })}\n\n`,
          );
        response.write(`data: ${JSON.stringify({ event: 'tool.started', run_id: events[1], tool: 'search' })}\n\n`);
        response.write(
          `data: ${JSON.stringify({ event: 'run.completed', run_id: events[1], output: pieces.join('') })}\n\n`,
        );
        response.end(': stream closed\n\n');
        return;
      }
      const stop = /^\/v1\/runs\/([^/]+)\/stop$/.exec(url.pathname);
      if (request.method === 'POST' && stop) {
        stopped.push(stop[1] ?? '');
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"stopping"}');
        return;
      }
      response.writeHead(404).end();
    })().catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    openAiBaseUrl: `http://127.0.0.1:${port}/v1`,
    hermesBaseUrl: `http://127.0.0.1:${port}`,
    requests,
    bodies,
    chatSessions,
    stopped,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
