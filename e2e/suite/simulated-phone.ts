/**
 * A simulated Conduit phone: what the app does on the relay and the host service, through the generated
 * clients, and what its Notification Service Extension does with a push. It registers an installation
 * on the relay, mints a pairing code there and hands it to the host service (`POST
 * /api/plugins/conduit_push/pair`), provisions the pairing's end-to-end key (`POST …/e2e`), reads its
 * pushes from the relay's APNs capture file (where a real phone would get them from APNs), opens sealed
 * ones with the device-side code the tests use, and answers decision cards on the relay, sealed for the
 * host. Its credentials stay in memory; nothing here prints them.
 */
import { randomBytes } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { e2eEnvelope } from '@conduit/contracts/crypto/e2e';
import { createDashboardClient } from '@conduit/sdk/dashboard';
import { createRelayClient } from '@conduit/sdk/relay';
import { sealAnswer } from '@conduit/server-dashboard/crypto/e2e-answer';
import { openNotification } from '@conduit/server-dashboard/crypto/e2e-device';
import { deriveE2eKeys, type E2eKeys } from '@conduit/server-dashboard/crypto/e2e-keys';
import { waitFor } from './wait.js';

/** A decision card as the phone shows it: an approval or a clarify question, answerable on the relay. */
export interface DecisionCard {
  kind: string;
  requestId?: string;
  /** The approval's description or the clarify question. */
  text: string;
  choices: string[];
}

/** One push as the phone received it. */
export interface PhoneNotification {
  type: string;
  /** The alert APNs carried, shown as is until the extension opens the envelope (generic when sealed). */
  banner: { title: string; body: string };
  /** True when the push carried an end-to-end envelope. */
  sealed: boolean;
  /** Bytes of ciphertext in the envelope (0 when not sealed). */
  ciphertextBytes: number;
  /** What the phone shows: the opened envelope, or the banner when there is none; null if it did not open. */
  shown: { title: string; body: string; card?: DecisionCard } | null;
  /** The capture line, exactly as the relay wrote it (what the relay and APNs saw). */
  captured: string;
}

interface Pairing {
  installationId: string;
  gatewayId: string;
  gatewayName: string;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** A call's failure as an error naming the call, the status and the error body (never a header). */
function callFailed(what: string, response: Response, error: unknown): Error {
  return new Error(`${what} failed: HTTP ${response.status} ${JSON.stringify(error ?? null)}`);
}

function decisionCard(value: unknown): DecisionCard | undefined {
  const decision = record(value);
  if (!decision) return undefined;
  const choices = Array.isArray(decision.choices) ? decision.choices.filter((c) => typeof c === 'string') : [];
  const requestId = text(decision.request_id);
  return {
    kind: text(decision.kind),
    ...(requestId ? { requestId } : {}),
    text: text(decision.description) || text(decision.question),
    choices,
  };
}

export class SimulatedPhone {
  private readonly relay;
  private pairing: Pairing | undefined;
  private keys: E2eKeys | undefined;
  private e2eSecret: string | undefined;
  /** Pushes received and not yet looked at, oldest first. */
  private readonly inbox: PhoneNotification[] = [];
  private readOffset = 0;
  private partialLine = '';

  private constructor(
    private readonly relayUrl: string,
    private readonly capturePath: string,
    private readonly deviceToken: string,
    readonly installationId: string,
    private readonly deviceCredential: string,
  ) {
    this.relay = createRelayClient({ baseUrl: relayUrl, headers: { authorization: `Bearer ${deviceCredential}` } });
  }

  /**
   * Registers a new installation on the relay (a fresh APNs device token, previews on), as the app does
   * on first launch. `bundleId` is the relay's APNs topic.
   */
  static async register(relayUrl: string, capturePath: string, bundleId: string): Promise<SimulatedPhone> {
    const deviceToken = randomBytes(32).toString('hex');
    const { data, error, response } = await createRelayClient({ baseUrl: relayUrl }).POST('/v1/installations', {
      body: {
        bundle_id: bundleId,
        device_token: deviceToken,
        environment: 'production',
        preferences: { show_previews: true },
      },
    });
    if (!data) throw callFailed('Registering the phone with the relay', response, error);
    const phone = new SimulatedPhone(relayUrl, capturePath, deviceToken, data.installation.id, data.credential);
    // Pushes captured before this phone existed are not its own.
    phone.readOffset = await fileSize(capturePath);
    return phone;
  }

  /** Values that must never appear in anything shown to the user. */
  secrets(): string[] {
    return [this.deviceCredential, this.deviceToken, ...(this.e2eSecret ? [this.e2eSecret] : [])];
  }

  /**
   * Pairs a Hermes host with this phone: a pairing code minted on the relay, handed to the host
   * service over its dashboard connection (`hostToken`: the standalone bearer token), which claims it.
   */
  async pairHost(hostUrl: string, hostToken: string): Promise<Pairing> {
    const minted = await this.relay.POST('/v1/installations/{id}/pairings', {
      params: { path: { id: this.installationId } },
      body: {},
    });
    if (!minted.data) throw callFailed('Minting a pairing code', minted.response, minted.error);
    const { data, error, response } = await this.dashboard(hostUrl, hostToken).POST('/api/plugins/conduit_push/pair', {
      body: { pairing_code: minted.data.pairing_code, relay_url: this.relayUrl },
    });
    if (!data) throw callFailed('Pairing the host service', response, error);
    this.pairing = { installationId: data.installation_id, gatewayId: data.gateway_id, gatewayName: data.gateway_name };
    return this.pairing;
  }

  /**
   * Turns on end-to-end encryption for the pairing: a fresh 32-byte root secret, given to the host over
   * the dashboard connection only (the relay never sees it). From then on the host seals every event.
   */
  async enableEncryption(hostUrl: string, hostToken: string): Promise<void> {
    const pairing = this.requirePairing();
    const kid = randomBytes(16).toString('hex');
    const secret = randomBytes(32);
    const { data, error, response } = await this.dashboard(hostUrl, hostToken).POST('/api/plugins/conduit_push/e2e', {
      body: {
        installation_id: pairing.installationId,
        gateway_id: pairing.gatewayId,
        kid,
        secret: secret.toString('base64url'),
      },
    });
    if (!data) throw callFailed('Provisioning the end-to-end key', response, error);
    this.keys = deriveE2eKeys(kid, new Uint8Array(secret));
    this.e2eSecret = secret.toString('base64url');
  }

  /** The next push of this type for this phone, waiting for the relay to capture it. */
  nextNotification(type: string, timeoutMs: number): Promise<PhoneNotification> {
    return waitFor(
      `the phone to receive a ${type} push`,
      async () => {
        await this.receive();
        const index = this.inbox.findIndex((notification) => notification.type === type);
        return index < 0 ? undefined : this.inbox.splice(index, 1)[0];
      },
      { timeoutMs, watchDir: path.dirname(this.capturePath) },
    );
  }

  /**
   * Answers a decision card on the relay with the device credential, as the app's card buttons do. With
   * end-to-end encryption on, the answer is sealed for this host, request and question (`questionId`:
   * '' for a single answer), so the relay only stores ciphertext.
   */
  async answer(requestId: string, answer: string, questionId = ''): Promise<string> {
    const pairing = this.requirePairing();
    const sealed = this.keys
      ? sealAnswer(
          answer,
          this.keys,
          { installationId: pairing.installationId, gatewayId: pairing.gatewayId, requestId, questionId },
          randomBytes(12),
        )
      : answer;
    const { data, error, response } = await this.relay.POST('/v1/decisions/{id}/respond', {
      params: { path: { id: requestId } },
      body: { answer: sealed, gateway_id: pairing.gatewayId, ...(questionId ? { question_id: questionId } : {}) },
    });
    if (!data) throw callFailed('Answering the decision', response, error);
    return data.status;
  }

  private dashboard(hostUrl: string, hostToken: string) {
    return createDashboardClient({ baseUrl: hostUrl, headers: { authorization: `Bearer ${hostToken}` } });
  }

  private requirePairing(): Pairing {
    if (!this.pairing) throw new Error('The phone is not paired with a host yet.');
    return this.pairing;
  }

  /** Reads the capture lines appended since the last read and keeps those addressed to this phone. */
  private async receive(): Promise<void> {
    let handle;
    try {
      handle = await open(this.capturePath, 'r');
    } catch {
      return; // nothing pushed yet
    }
    try {
      const { size } = await handle.stat();
      if (size <= this.readOffset) return;
      const buffer = Buffer.alloc(size - this.readOffset);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, this.readOffset);
      this.readOffset += bytesRead;
      const lines = (this.partialLine + buffer.subarray(0, bytesRead).toString('utf8')).split('\n');
      this.partialLine = lines.pop() ?? '';
      for (const line of lines) {
        const notification = line.trim() ? this.notificationOf(line) : undefined;
        if (notification) this.inbox.push(notification);
      }
    } finally {
      await handle.close();
    }
  }

  /** A capture line as this phone sees it, or undefined when it is addressed to another device. */
  private notificationOf(line: string): PhoneNotification | undefined {
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = record(JSON.parse(line));
    } catch {
      return undefined;
    }
    if (parsed?.deviceToken !== this.deviceToken) return undefined;
    const payload = record(record(parsed.notification)?.payload) ?? {};
    const routing = record(payload.conduit) ?? {};
    const alert = record(record(payload.aps)?.alert) ?? {};
    const banner = { title: text(alert.title), body: text(alert.body) };
    const type = text(routing.type);
    const envelope = e2eEnvelope.safeParse(payload.conduit_e2e);
    if (!envelope.success) {
      // A plain push: the banner is the content, the card rides beside it.
      const card = decisionCard(record(record(payload.body)?.conduit)?.decision);
      return {
        type,
        banner,
        sealed: false,
        ciphertextBytes: 0,
        shown: { ...banner, ...(card ? { card } : {}) },
        captured: line,
      };
    }
    const ciphertextBytes = Buffer.from(envelope.data.ct, 'base64url').length;
    const opened =
      this.keys && this.pairing
        ? openNotification(envelope.data, type, this.keys, this.pairing, Math.floor(Date.now() / 1000))
        : null;
    const found = decisionCard(opened?.decision);
    // A sealed card's request id also rides in the envelope (`req`), which is what the relay parked.
    const requestId = found?.requestId ?? (envelope.data.req || undefined);
    const card = found && requestId ? { ...found, requestId } : found;
    return {
      type,
      banner,
      sealed: true,
      ciphertextBytes,
      shown: opened ? { title: text(opened.title), body: text(opened.body), ...(card ? { card } : {}) } : null,
      captured: line,
    };
  }
}

function fileSize(file: string): Promise<number> {
  return stat(file).then(
    (stats) => stats.size,
    () => 0,
  );
}
