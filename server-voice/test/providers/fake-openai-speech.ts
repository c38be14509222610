import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for OpenAI's speech routes, faithful to their documented wire:
 * - `POST /v1/audio/transcriptions`: `multipart/form-data` with `file` and `model` required, `language`,
 *   `prompt`, `response_format` optional; answers `{"text": …}` for `json`.
 * - `POST /v1/audio/speech`: JSON `{model, input, voice}` required, `response_format`, `speed`, `instructions`
 *   optional; answers the audio bytes as a chunked stream.
 * - Errors as `{"error": {"message", "type", "param", "code"}}` with 400/401/404/429/500 statuses.
 * Tests script the answers and read what was received.
 */

export interface ReceivedTranscription {
  authorization: string | undefined;
  fields: Record<string, string>;
  fileName: string;
  fileType: string;
  file: Uint8Array;
}

export interface ReceivedSpeech {
  authorization: string | undefined;
  body: Record<string, unknown>;
}

/** How the fake answers one speech request: chunks written in order, each optionally after a promise. */
export interface SpeechScript {
  status?: number;
  contentType?: string;
  chunks: (Uint8Array | { after: Promise<unknown> })[];
}

export class FakeOpenAiSpeech {
  readonly transcriptions: ReceivedTranscription[] = [];
  readonly speeches: ReceivedSpeech[] = [];
  /** Requests whose client went away before the answer ended. */
  abortedRequests = 0;
  apiKey: string | null = 'sk-test-secret-key-0123456789';
  transcribe: (
    request: ReceivedTranscription,
  ) => { status: number; body: unknown } | Promise<{ status: number; body: unknown }> = () => ({
    status: 200,
    body: { text: ' hello world ' },
  });
  speak: (request: ReceivedSpeech) => SpeechScript = () => ({ chunks: [new Uint8Array(4800)] });
  private server: Server | null = null;
  baseUrl = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => void this.route(request, response));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.baseUrl = `http://127.0.0.1:${port}/v1`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private error(response: ServerResponse, status: number, message: string, code: string | null): void {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } }));
  }

  private authorized(request: IncomingMessage, response: ServerResponse): boolean {
    if (this.apiKey === null) return true;
    const header = request.headers.authorization;
    if (header === `Bearer ${this.apiKey}`) return true;
    const shown = header?.replace(/^Bearer /, '') ?? '';
    this.error(
      response,
      401,
      `Incorrect API key provided: ${shown.slice(0, 6)}***${shown.slice(-4)}.`,
      'invalid_api_key',
    );
    return false;
  }

  private async route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (request.method !== 'POST') return this.error(response, 405, 'Method not allowed', null);
    if (request.url === '/v1/audio/transcriptions') return this.transcription(request, response, body);
    if (request.url === '/v1/audio/speech') return this.speech(request, response, body);
    this.error(response, 404, `Invalid URL (POST ${request.url})`, null);
  }

  private async transcription(request: IncomingMessage, response: ServerResponse, body: Buffer): Promise<void> {
    if (!this.authorized(request, response)) return;
    const type = request.headers['content-type'] ?? '';
    if (!type.startsWith('multipart/form-data')) return this.error(response, 400, 'Expected multipart/form-data', null);
    const form = await new Request('http://fake/', {
      method: 'POST',
      headers: { 'content-type': type },
      body,
    }).formData();
    const file = form.get('file');
    const model = form.get('model');
    if (!(file instanceof Blob)) return this.error(response, 400, "Missing required parameter: 'file'.", null);
    if (typeof model !== 'string') return this.error(response, 400, "Missing required parameter: 'model'.", null);
    const fields: Record<string, string> = {};
    for (const [key, value] of form.entries()) if (typeof value === 'string') fields[key] = value;
    const received: ReceivedTranscription = {
      authorization: request.headers.authorization,
      fields,
      fileName: (file as File).name,
      fileType: file.type,
      file: new Uint8Array(await file.arrayBuffer()),
    };
    this.transcriptions.push(received);
    response.on('close', () => {
      if (!response.writableFinished) this.abortedRequests++;
    });
    const answer = await this.transcribe(received);
    if (response.destroyed) return;
    response.writeHead(answer.status, { 'content-type': 'application/json' });
    response.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
  }

  private async speech(request: IncomingMessage, response: ServerResponse, raw: Buffer): Promise<void> {
    if (!this.authorized(request, response)) return;
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch {
      return this.error(response, 400, 'We could not parse the JSON body of your request.', null);
    }
    for (const key of ['model', 'input', 'voice'])
      if (typeof body[key] !== 'string')
        return this.error(response, 400, `Missing required parameter: '${key}'.`, null);
    this.speeches.push({ authorization: request.headers.authorization, body });
    const script = this.speak({ authorization: request.headers.authorization, body });
    response.on('close', () => {
      if (!response.writableFinished) this.abortedRequests++;
    });
    response.writeHead(script.status ?? 200, { 'content-type': script.contentType ?? 'audio/pcm' });
    response.flushHeaders();
    for (const chunk of script.chunks) {
      if (response.destroyed) return;
      if (chunk instanceof Uint8Array) response.write(chunk);
      else await chunk.after;
    }
    if (!response.destroyed) response.end();
  }
}
