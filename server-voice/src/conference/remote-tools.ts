import type { SessionTool } from '@conduit/contracts/voice/events';
import type { ByteStreamReader, Room } from '@livekit/rtc-node';
import type { Logger } from '../log.js';
import type { Recipient } from '../protocol/realtime-protocol.js';
import {
  checkReference,
  isValidIdentity,
  isValidMethodName,
  looksLikeReference,
  registryName,
  transferTimeoutSeconds,
  type ByteStreamReference,
  type RemoteToolPolicy,
} from './tool-rules.js';

export const TOOLS_TOPIC = 'conference.tools';
const MAX_TOOLS = 16;
const MAX_CATALOG_BYTES = 64 * 1024;
const MAX_DESCRIPTION_BYTES = 4 * 1024;
const MAX_PENDING_STREAMS = 8;
const MAX_AUDIT_RECORDS = 256;
/** A cancelled byte stream must end (its trailer) within this, or the room is rejoined. */
export const DRAIN_LIMIT_MS = 5_000;
const TOOL_KEYS = new Set(['type', 'function']);
const FUNCTION_KEYS = new Set(['name', 'description', 'parameters']);

export type AuditEvent = 'registration' | 'policy' | 'invocation' | 'cancellation' | 'owner_disconnect';

/** One audit record: who, which tool, what happened. Never arguments or results. */
export interface AuditRecord {
  sequence: number;
  recorded_at: string;
  event: AuditEvent;
  participant_identity: string;
  tool_name: string;
  tier: number;
  outcome: string;
}

interface RemoteTool {
  owner: string;
  method: string;
  registryName: string;
  description?: string;
  parameters: Record<string, unknown>;
}

/** Why a byte-stream result failed (CONTRACT.md §4, bounded byte-stream tool results). */
export type TransferFailure =
  | 'transfer_timeout'
  | 'transfer_incomplete'
  | 'owner_disconnected'
  | 'transfer_cancelled'
  | 'room_replaced'
  | 'owner_mismatch'
  | 'header_mismatch'
  | 'stream_collision'
  | 'too_many_pending'
  | 'handler_registration_failed';

class TransferError extends Error {
  constructor(readonly code: TransferFailure) {
    super(code);
  }
}

interface PendingStream {
  reference: ByteStreamReference;
  fail: (code: TransferFailure) => void;
}

export interface RemoteToolsOptions {
  room: Room;
  roomName: string;
  policy: RemoteToolPolicy;
  /** Native RPC response timeout, and the configured part of the transfer deadline. */
  toolTimeoutMs: number;
  send: (topic: string, body: unknown, recipient: Recipient) => void;
  logger: Logger;
  /** Unix seconds (consent expiry is compared with it). */
  nowSeconds?: () => number;
  /** How long a cancelled stream may take to end (5 s) before `onStuckStream`. */
  drainLimitMs?: number;
  /** A cancelled stream never ended: the room generation is abandoned and joined again. */
  onStuckStream?: () => void;
}

/** The catalog from `conference.tools.register`, or null when any part of it is invalid. */
function parseCatalog(
  message: Record<string, unknown>,
  bytes: number,
): Omit<RemoteTool, 'owner' | 'registryName'>[] | null {
  const tools = message.tools;
  if (!Array.isArray(tools) || tools.length > MAX_TOOLS || bytes > MAX_CATALOG_BYTES) return null;
  const parsed: Omit<RemoteTool, 'owner' | 'registryName'>[] = [];
  const names = new Set<string>();
  for (const raw of tools) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return null;
    const tool = raw as Record<string, unknown>;
    if (tool.type !== 'function' || Object.keys(tool).some((key) => !TOOL_KEYS.has(key))) return null;
    const fn = tool.function;
    if (typeof fn !== 'object' || fn === null || Array.isArray(fn)) return null;
    const { name, description, parameters } = fn as Record<string, unknown>;
    if (Object.keys(fn).some((key) => !FUNCTION_KEYS.has(key))) return null;
    if (typeof name !== 'string' || !isValidMethodName(name) || names.has(name)) return null;
    if (
      description !== undefined &&
      (typeof description !== 'string' || Buffer.byteLength(description) > MAX_DESCRIPTION_BYTES)
    )
      return null;
    if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) return null;
    if ((parameters as Record<string, unknown>).type !== 'object') return null;
    names.add(name);
    parsed.push({
      method: name,
      ...(description === undefined ? {} : { description }),
      parameters: parameters as Record<string, unknown>,
    });
  }
  return parsed;
}

/**
 * The room's remote tools: each participant's catalog (registered by `conference.tools.register` after the
 * participant registered a LiveKit RPC method of the same name), the operator's policy checked at
 * registration and again at every call, invocation by native RPC, bounded byte-stream results, and an audit
 * ring of the newest 256 decisions. A participant's tools go when the participant leaves.
 */
export class RemoteTools {
  private readonly tools = new Map<string, RemoteTool>();
  private readonly pending = new Map<string, PendingStream>();
  private readonly auditRing: AuditRecord[] = [];
  private sequence = 0;
  private closed = false;

  constructor(private readonly options: RemoteToolsOptions) {
    if (options.policy.invalid)
      options.logger.warn('remote_tool_policy_invalid', { room: options.roomName, reason: options.policy.invalid });
  }

  /** The newest audit records, oldest first. */
  get audit(): readonly AuditRecord[] {
    return this.auditRing;
  }

  private now(): number {
    return this.options.nowSeconds?.() ?? Date.now() / 1000;
  }

  private record(event: AuditEvent, identity: string, tool: string, tier: number, outcome: string): void {
    this.sequence += 1;
    const record: AuditRecord = {
      sequence: this.sequence,
      recorded_at: new Date().toISOString(),
      event,
      participant_identity: identity,
      tool_name: tool,
      tier,
      outcome,
    };
    this.auditRing.push(record);
    if (this.auditRing.length > MAX_AUDIT_RECORDS) this.auditRing.shift();
    const { event: audited, ...fields } = record;
    this.options.logger.info('remote_tool_audit', { room: this.options.roomName, audit_event: audited, ...fields });
  }

  /** Tools the agent may see now, under their registry names. */
  list(): SessionTool[] {
    return [...this.tools.values()].map((tool) => ({
      type: 'function',
      name: tool.registryName,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: tool.parameters,
    }));
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  private ownedBy(identity: string): RemoteTool[] {
    return [...this.tools.values()].filter((tool) => tool.owner === identity);
  }

  private clearOwner(identity: string): void {
    for (const tool of this.ownedBy(identity)) this.tools.delete(tool.registryName);
  }

  /** `conference.tools.register`: replaces the sender's whole catalog, or rejects and clears it. */
  register(identity: string, message: Record<string, unknown>, bytes: number): void {
    if (this.closed) return;
    const reject = (): void => {
      this.clearOwner(identity);
      this.options.send(TOOLS_TOPIC, { type: 'conference.tools.rejected' }, identity);
    };
    const catalog = isValidIdentity(identity) ? parseCatalog(message, bytes) : null;
    if (!catalog) {
      this.record('registration', identity, '', 0, 'denied');
      reject();
      return;
    }
    const now = this.now();
    const accepted: RemoteTool[] = [];
    for (const tool of catalog) {
      const decision = this.options.policy.decide(identity, tool.method, now);
      this.record('policy', identity, tool.method, decision.tier, decision.reason);
      const name = registryName(identity, tool.method);
      const taken = this.tools.get(name);
      if (!decision.allowed || (taken && taken.owner !== identity)) {
        this.record('registration', identity, tool.method, decision.tier, 'denied');
        reject();
        return;
      }
      accepted.push({ ...tool, owner: identity, registryName: name });
    }
    this.clearOwner(identity);
    for (const tool of accepted) {
      this.tools.set(tool.registryName, tool);
      this.record(
        'registration',
        identity,
        tool.method,
        this.options.policy.decide(identity, tool.method, now).tier,
        'accepted',
      );
    }
    this.options.send(TOOLS_TOPIC, { type: 'conference.tools.registered' }, identity);
  }

  /** The owner left the room: its tools and its pending results go. */
  removeOwner(identity: string): void {
    for (const tool of this.ownedBy(identity)) this.record('owner_disconnect', identity, tool.method, 0, 'removed');
    this.clearOwner(identity);
    for (const stream of [...this.pending.values()])
      if (stream.reference.ownerIdentity === identity) stream.fail('owner_disconnected');
  }

  /**
   * Calls a remote tool for the agent: the policy is checked again, then the owner's RPC method runs with the
   * arguments as a JSON object. The answer is compact JSON text; failures are `{"error": …}` for the agent.
   */
  async call(name: string, args: string, signal: AbortSignal): Promise<string> {
    const tool = this.tools.get(name);
    if (!tool) return JSON.stringify({ error: `tool ${name} is not available` });
    const decision = this.options.policy.decide(tool.owner, tool.method, this.now());
    if (!decision.allowed) {
      this.record('invocation', tool.owner, tool.method, decision.tier, decision.reason);
      return JSON.stringify({ error: `remote tool ${tool.method} is not allowed (${decision.reason})` });
    }
    let parsedArgs: unknown;
    try {
      parsedArgs = JSON.parse(args || '{}');
    } catch {
      parsedArgs = {};
    }
    if (typeof parsedArgs !== 'object' || parsedArgs === null || Array.isArray(parsedArgs)) parsedArgs = {};
    const local = this.options.room.localParticipant;
    if (!local) return JSON.stringify({ error: 'the agent is not in the room' });
    let response: string;
    try {
      response = await local.performRpc({
        destinationIdentity: tool.owner,
        method: tool.method,
        payload: JSON.stringify(parsedArgs),
        responseTimeout: this.options.toolTimeoutMs,
      });
    } catch (error) {
      this.record('invocation', tool.owner, tool.method, decision.tier, 'error');
      return JSON.stringify({ error: error instanceof Error ? error.message.slice(0, 500) : 'remote tool failed' });
    }
    if (signal.aborted) {
      this.record('cancellation', tool.owner, tool.method, decision.tier, 'cancelled');
      return JSON.stringify({ error: 'cancelled' });
    }
    let value: unknown;
    try {
      value = JSON.parse(response);
    } catch {
      this.record('invocation', tool.owner, tool.method, decision.tier, 'success');
      return JSON.stringify({ result: response });
    }
    if (!looksLikeReference(value)) {
      this.record('invocation', tool.owner, tool.method, decision.tier, 'success');
      return JSON.stringify(value);
    }
    const checked = checkReference(response, value, tool.owner);
    if (!checked.ok) {
      this.record('invocation', tool.owner, tool.method, decision.tier, 'error');
      return JSON.stringify({ error: checked.code });
    }
    try {
      const bytes = await this.receive(checked.reference, signal);
      this.record('invocation', tool.owner, tool.method, decision.tier, 'success');
      return JSON.stringify(resultEnvelope(checked.reference, bytes));
    } catch (error) {
      const code = error instanceof TransferError ? error.code : 'transfer_incomplete';
      this.record(
        code === 'transfer_cancelled' ? 'cancellation' : 'invocation',
        tool.owner,
        tool.method,
        decision.tier,
        code === 'transfer_cancelled' ? 'cancelled' : 'error',
      );
      return JSON.stringify({ error: code, text_summary: checked.reference.textSummary });
    }
  }

  /**
   * Receives one byte-stream result: reserves its topic, tells the owner the agent is ready, then accepts
   * exactly `expected_size` bytes from the owner under the matching header, within the transfer deadline.
   */
  private receive(reference: ByteStreamReference, signal: AbortSignal): Promise<Uint8Array> {
    const { room, send } = this.options;
    if (this.pending.has(reference.topic)) return Promise.reject(new TransferError('stream_collision'));
    if (this.pending.size >= MAX_PENDING_STREAMS) return Promise.reject(new TransferError('too_many_pending'));
    return new Promise<Uint8Array>((resolve, reject) => {
      let settled = false;
      /** The owner's stream, once it opened: after a failure it is drained, and must end in time. */
      let stream: { ended: boolean } | null = null;
      const timeoutMs = transferTimeoutSeconds(this.options.toolTimeoutMs / 1000, reference.expectedSize) * 1000;
      const finish = (error: TransferError | null, bytes?: Uint8Array): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.pending.delete(reference.topic);
        try {
          room.unregisterByteStreamHandler(reference.topic);
        } catch {
          // The room is gone already.
        }
        if (!error) {
          resolve(bytes ?? new Uint8Array());
          return;
        }
        // The owner is asked to stop; an open stream is drained (its bytes dropped) and must end soon.
        send(
          TOOLS_TOPIC,
          { type: 'agent:tool-result-stream-cancel', stream_id: reference.streamId, topic: reference.topic },
          reference.ownerIdentity,
        );
        if (stream && !stream.ended) this.watchDrain(stream, reference);
        reject(error);
      };
      const onAbort = (): void => finish(new TransferError('transfer_cancelled'));
      const timer = setTimeout(() => finish(new TransferError('transfer_timeout')), timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      this.pending.set(reference.topic, { reference, fail: (code) => finish(new TransferError(code)) });
      try {
        room.registerByteStreamHandler(reference.topic, (reader, participant) => {
          if (stream) return;
          const opened = { ended: false };
          stream = opened;
          void this.read(reader, participant.identity, reference, opened, finish);
        });
      } catch {
        finish(new TransferError('handler_registration_failed'));
        return;
      }
      send(
        TOOLS_TOPIC,
        { type: 'agent:tool-result-stream-ready', stream_id: reference.streamId, topic: reference.topic },
        reference.ownerIdentity,
      );
    });
  }

  /**
   * Reads the owner's stream: header checked, every chunk size-accounted before it is kept (an overrun is
   * refused, never buffered). After any failure the rest is read and dropped until the stream's trailer.
   */
  private async read(
    reader: ByteStreamReader,
    sender: string,
    reference: ByteStreamReference,
    stream: { ended: boolean },
    finish: (error: TransferError | null, bytes?: Uint8Array) => void,
  ): Promise<void> {
    const info = reader.info;
    let failed = false;
    const fail = (code: TransferFailure): void => {
      failed = true;
      finish(new TransferError(code));
    };
    if (sender !== reference.ownerIdentity) fail('owner_mismatch');
    else if (
      info.streamId !== reference.streamId ||
      info.topic !== reference.topic ||
      info.mimeType !== reference.mimeType ||
      (info.totalSize !== undefined && info.totalSize !== reference.expectedSize)
    )
      fail('header_mismatch');
    const buffer = failed ? new Uint8Array() : new Uint8Array(reference.expectedSize);
    let filled = 0;
    try {
      for await (const chunk of reader) {
        if (failed) continue;
        // Failed elsewhere (deadline, cancellation, owner gone): drain from now on.
        if (!this.pending.has(reference.topic)) {
          failed = true;
          continue;
        }
        if (filled + chunk.byteLength > reference.expectedSize) {
          fail('transfer_incomplete');
          continue;
        }
        buffer.set(chunk, filled);
        filled += chunk.byteLength;
      }
    } catch {
      if (!failed) fail('transfer_incomplete');
    } finally {
      stream.ended = true;
    }
    if (failed) return;
    if (filled !== reference.expectedSize) fail('transfer_incomplete');
    else finish(null, buffer);
  }

  /** A cancelled stream whose trailer does not come within the drain limit leaves the SDK stuck: escalate. */
  private watchDrain(stream: { ended: boolean }, reference: ByteStreamReference): void {
    const limitMs = this.options.drainLimitMs ?? DRAIN_LIMIT_MS;
    setTimeout(() => {
      if (stream.ended || this.closed) return;
      this.options.logger.warn('tool_result_stream_stuck', {
        room: this.options.roomName,
        participant: reference.ownerIdentity,
        limit_ms: limitMs,
      });
      this.options.onStuckStream?.();
    }, limitMs).unref();
  }

  /** The room is left: every pending transfer fails and the catalogs are dropped. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of [...this.pending.values()]) stream.fail('room_replaced');
    this.tools.clear();
  }
}

/** What the agent gets for a byte-stream result: the image itself for an image, a description otherwise. */
export function resultEnvelope(reference: ByteStreamReference, bytes: Uint8Array): Record<string, unknown> {
  if (reference.mimeType.toLowerCase().startsWith('image/'))
    return {
      _multimodal: true,
      content: [
        { type: 'text', text: reference.textSummary },
        {
          type: 'image_url',
          image_url: { url: `data:${reference.mimeType};base64,${Buffer.from(bytes).toString('base64')}` },
        },
      ],
      text_summary: reference.textSummary,
    };
  return {
    binary_result: { mime_type: reference.mimeType, size: bytes.byteLength, available_to_model: false },
    text_summary: reference.textSummary,
  };
}
