/**
 * The Relay REST calls the connector makes (PROTOCOL.md §4), through the client generated from the
 * locked contract, so a wire change fails to compile. Errors are classified the way the reference
 * adapter does: 401 auth; 403/409 conflict; 408/429/≥500 and network errors retryable; else rejected.
 */
import { createRelayMessengerClient, type components } from '@conduit/sdk/relay-messenger';

export type MessagePart = components['schemas']['MessagePart'];
/**
 * A Message to send. `silent` has a server default, which the generated type marks as required;
 * we leave it out (an ordinary, audible Message) rather than send a field the user did not choose.
 */
export type MessageContent = Omit<components['schemas']['MessageContent'], 'silent'> & { silent?: boolean };
export type RelayMessage = components['schemas']['Message'];
export type RelayChat = components['schemas']['Chat'];
export type CreatePaymentRequest = components['schemas']['CreatePaymentRequestRequest'];

export type RelayErrorKind = 'auth' | 'conflict' | 'retryable' | 'rejected';

export class RelayApiError extends Error {
  override name = 'RelayApiError';
  constructor(
    readonly kind: RelayErrorKind,
    readonly status: number | null,
    message: string,
    /** Relay's `error.message`, when it sent one. */
    readonly detail = '',
  ) {
    super(message);
  }
}

export function classifyStatus(status: number): RelayErrorKind {
  if (status === 401) return 'auth';
  if (status === 403 || status === 409) return 'conflict';
  if (status === 408 || status === 429 || status >= 500) return 'retryable';
  return 'rejected';
}

function detailOf(body: unknown): string {
  if (typeof body === 'object' && body !== null) {
    const err = (body as Record<string, unknown>)['error'];
    if (typeof err === 'object' && err !== null) {
      const m = (err as Record<string, unknown>)['message'];
      if (typeof m === 'string') return m;
    }
  }
  return '';
}

/** The answer to a resent Message whose first send already committed. */
const IDEMPOTENCY_USED = /^Idempotency key was already used/;

export interface RelayApiOptions {
  origin: string;
  agentToken: string;
  fetch?: typeof fetch;
  /** Timeout of one REST call (the reference uses 30 s for sends). */
  timeoutMs?: number;
}

export type SentReaction = components['schemas']['SendReactionRequest'];

export interface DownloadedAttachment {
  contentType: string;
  filename: string;
  bytes: Buffer;
}

export type SendOutcome = { kind: 'sent'; messageId: string } | { kind: 'already_sent' };

export class RelayApi {
  private readonly client: ReturnType<typeof createRelayMessengerClient>;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;
  private readonly origin: string;
  private readonly authorization: string;

  constructor(options: RelayApiOptions) {
    this.fetchImpl = options.fetch ?? fetch;
    this.origin = new URL(options.origin).origin;
    this.authorization = `Bearer ${options.agentToken}`;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.client = createRelayMessengerClient({
      baseUrl: options.origin,
      headers: { Authorization: this.authorization },
      fetch: (req: Request) => this.fetchImpl(req, { signal: AbortSignal.timeout(this.timeoutMs) }),
    });
  }

  /** Runs one call; network failures become retryable RelayApiErrors (no token in the message). */
  private async call<T extends { response: Response; error?: unknown }>(
    what: string,
    run: () => Promise<T>,
  ): Promise<T> {
    let result: T;
    try {
      result = await run();
    } catch (err) {
      throw new RelayApiError('retryable', null, `${what}: network error: ${(err as Error).message}`);
    }
    if (!result.response.ok) {
      const status = result.response.status;
      const detail = detailOf(result.error);
      throw new RelayApiError(classifyStatus(status), status, `${what}: HTTP ${status} ${detail}`.trim(), detail);
    }
    return result;
  }

  /**
   * POST /v1/chats/{chatId}/messages with an Idempotency-Key. A 409 saying the key was already
   * used means an earlier attempt committed: success, and nothing is sent twice.
   */
  async sendMessage(chatId: string, message: MessageContent, idempotencyKey: string): Promise<SendOutcome> {
    try {
      const { data } = await this.call('send message', () =>
        this.client.POST('/v1/chats/{chatId}/messages', {
          params: { path: { chatId }, header: { 'Idempotency-Key': idempotencyKey } },
          body: { message: message as components['schemas']['MessageContent'] },
        }),
      );
      return { kind: 'sent', messageId: data?.message.id ?? '' };
    } catch (err) {
      if (err instanceof RelayApiError && err.status === 409 && IDEMPOTENCY_USED.test(err.detail)) {
        return { kind: 'already_sent' };
      }
      throw err;
    }
  }

  async markRead(chatId: string): Promise<void> {
    await this.call('mark read', () => this.client.POST('/v1/chats/{chatId}/read', { params: { path: { chatId } } }));
  }

  async startTyping(chatId: string): Promise<void> {
    await this.call('start typing', () =>
      this.client.POST('/v1/chats/{chatId}/typing', { params: { path: { chatId } } }),
    );
  }

  async stopTyping(chatId: string): Promise<void> {
    await this.call('stop typing', () =>
      this.client.DELETE('/v1/chats/{chatId}/typing', { params: { path: { chatId } } }),
    );
  }

  async getMessage(messageId: string): Promise<RelayMessage> {
    const { data } = await this.call('get message', () =>
      this.client.GET('/v1/messages/{messageId}', { params: { path: { messageId } } }),
    );
    if (data === undefined) throw new RelayApiError('rejected', 200, 'get message: empty body');
    return data as unknown as RelayMessage;
  }

  /** POST /v1/messages/{messageId}/reactions: a tapback, or a custom emoji (1–32 UTF-16 units). */
  async react(messageId: string, reaction: SentReaction): Promise<void> {
    await this.call('reaction', () =>
      this.client.POST('/v1/messages/{messageId}/reactions', { params: { path: { messageId } }, body: reaction }),
    );
  }

  /**
   * GET /v1/attachments/{attachmentId}, then the bytes from its download_url. The Agent Token goes
   * only to the API origin itself: a download URL on another host (a storage bucket) never sees it.
   * Refused above `maxBytes`, both by the declared size and while streaming.
   */
  async downloadAttachment(attachmentId: string, maxBytes: number): Promise<DownloadedAttachment> {
    const { data } = await this.call('get attachment', () =>
      this.client.GET('/v1/attachments/{attachmentId}', { params: { path: { attachmentId } } }),
    );
    if (data === undefined) throw new RelayApiError('rejected', 200, 'get attachment: empty body');
    if (data.status !== 'complete' || data.download_url === undefined) {
      // A pending upload may complete later: worth a retry; a failed one never will.
      const kind = data.status === 'failed' ? 'rejected' : 'retryable';
      throw new RelayApiError(kind, 200, `attachment is ${data.status}, not downloadable`);
    }
    if (data.size_bytes > maxBytes) {
      throw new RelayApiError('rejected', 200, `attachment is ${data.size_bytes} bytes; the most is ${maxBytes}`);
    }
    let url: URL;
    try {
      url = new URL(data.download_url, this.origin);
    } catch {
      throw new RelayApiError('rejected', 200, 'attachment download_url is not a URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new RelayApiError('rejected', 200, 'attachment download_url is not http(s)');
    }
    const headers: Record<string, string> = url.origin === this.origin ? { Authorization: this.authorization } : {};
    let res: Response;
    try {
      res = await this.fetchImpl(url, { headers, signal: AbortSignal.timeout(120_000) });
    } catch (err) {
      throw new RelayApiError('retryable', null, `download: network error: ${(err as Error).message}`);
    }
    if (!res.ok || res.body === null) {
      await res.body?.cancel();
      throw new RelayApiError(classifyStatus(res.status), res.status, `download: HTTP ${res.status}`);
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        total += chunk.byteLength;
        if (total > maxBytes) {
          await res.body.cancel().catch(() => {});
          throw new RelayApiError('rejected', res.status, `download is over ${maxBytes} bytes`);
        }
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof RelayApiError) throw err;
      throw new RelayApiError('retryable', null, `download: network error: ${(err as Error).message}`);
    }
    return { contentType: data.content_type, filename: data.filename, bytes: Buffer.concat(chunks) };
  }

  async listChats(cursor: string | null): Promise<{ items: unknown; nextCursor: unknown }> {
    const { data } = await this.call('list chats', () =>
      this.client.GET('/v1/chats', { params: { query: { limit: 100, ...(cursor !== null ? { cursor } : {}) } } }),
    );
    const body = data as unknown as Record<string, unknown> | undefined;
    return { items: body?.['chats'], nextCursor: body?.['next_cursor'] };
  }

  async listMessages(chatId: string, cursor: string | null): Promise<{ items: unknown; nextCursor: unknown }> {
    const { data } = await this.call('list messages', () =>
      this.client.GET('/v1/chats/{chatId}/messages', {
        params: { path: { chatId }, query: { limit: 100, ...(cursor !== null ? { cursor } : {}) } },
      }),
    );
    const body = data as unknown as Record<string, unknown> | undefined;
    return { items: body?.['messages'], nextCursor: body?.['next_cursor'] };
  }

  /** POST /v1/attachments, then the raw PUT to the allocated URL WITHOUT the Agent Token. */
  async uploadAttachment(file: { filename: string; contentType: string; bytes: Uint8Array }): Promise<string> {
    if (file.bytes.byteLength > 104_857_600) throw new RelayApiError('rejected', null, 'attachment is over 100 MiB');
    const { data } = await this.call('request upload', () =>
      this.client.POST('/v1/attachments', {
        body: { filename: file.filename, content_type: file.contentType, size_bytes: file.bytes.byteLength },
      }),
    );
    if (data === undefined) throw new RelayApiError('rejected', 200, 'request upload: empty body');
    let put: Response;
    try {
      // A separate request with exactly the required headers: the upload URL is not Relay's API
      // and must never see the Agent Token.
      put = await this.fetchImpl(data.upload_url, {
        method: 'PUT',
        headers: data.required_headers,
        body: file.bytes,
        signal: AbortSignal.timeout(120_000),
      });
    } catch (err) {
      throw new RelayApiError('retryable', null, `upload: network error: ${(err as Error).message}`);
    }
    if (!put.ok) throw new RelayApiError(classifyStatus(put.status), put.status, `upload: HTTP ${put.status}`);
    return data.attachment_id;
  }

  async createPaymentRequest(body: CreatePaymentRequest, idempotencyKey: string): Promise<string> {
    const { data } = await this.call('create payment request', () =>
      this.client.POST('/v1/payment_requests', { params: { header: { 'Idempotency-Key': idempotencyKey } }, body }),
    );
    const url = (data as unknown as Record<string, unknown> | undefined)?.['checkout_url'];
    if (typeof url !== 'string') throw new RelayApiError('rejected', 200, 'create payment request: no checkout_url');
    return url;
  }
}
