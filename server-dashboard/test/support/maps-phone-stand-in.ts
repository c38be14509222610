import { randomBytes } from 'node:crypto';
import { LOCATION_LABEL, mapsLookupPlaintext, type MapsLookupPlaintext } from '@conduit/contracts/dashboard/location';
import { TEST_TOKEN } from './config.js';
import { chachaOpen, chachaSeal, mapsAadOf, PhoneStandIn, type Answer } from './phone-stand-in.js';

/**
 * Conduit's Location Push extension answering conduit_maps, as a test client: it shares location with
 * `maps` among its features, fetches the lookup a push named (`GET /location/maps/{id}`), opens it with
 * its own location key (node:crypto, apart from the host's @noble code) and posts its answer sealed.
 */

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');

export interface MapsAnswerEnvelope {
  v: 1;
  device_id: string;
  kid: string;
  lookup_id: string;
  nonce: string;
  ct: string;
}

export class MapsPhoneStandIn extends PhoneStandIn {
  constructor(hostUrl: string, deviceId: string, options: { secret?: Uint8Array; profile?: string } = {}) {
    super(hostUrl, 'location', LOCATION_LABEL, deviceId, options);
  }

  private async mapsCall(method: 'GET' | 'POST', lookupId: string, query: Record<string, string>, body?: unknown) {
    const params = new URLSearchParams({ ...(this.profile ? { profile: this.profile } : {}), ...query });
    const search = params.size > 0 ? `?${params.toString()}` : '';
    const response = await fetch(
      `${this.hostUrl}/api/plugins/conduit_push/location/maps/${encodeURIComponent(lookupId)}${search}`,
      {
        method,
        headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      },
    );
    return { status: response.status, body: (await response.json()) as Record<string, unknown> } satisfies Answer;
  }

  /** `GET /location/maps/{id}` as this device. */
  fetchLookup(lookupId: string, deviceId = this.deviceId): Promise<Answer> {
    return this.mapsCall('GET', lookupId, { device_id: deviceId });
  }

  /** Opens a fetched lookup with this device's key; null when it does not open. */
  openLookup(envelope: MapsAnswerEnvelope): MapsLookupPlaintext | null {
    if (!this.kid) throw new Error('agree a key first');
    const aad = mapsAadOf(this.label, envelope.kid, envelope.device_id, envelope.lookup_id);
    const plain = chachaOpen(
      this.key('maps host-to-device'),
      Buffer.from(envelope.nonce, 'base64url'),
      aad,
      Buffer.from(envelope.ct, 'base64url'),
    );
    return plain ? mapsLookupPlaintext.parse(JSON.parse(plain.toString('utf8'))) : null;
  }

  /** Fetches and opens the lookup; throws when it cannot. */
  async lookup(lookupId: string): Promise<MapsLookupPlaintext> {
    const fetched = await this.fetchLookup(lookupId);
    if (fetched.status !== 200) throw new Error(`lookup ${fetched.status}: ${JSON.stringify(fetched.body)}`);
    const opened = this.openLookup(fetched.body.lookup as MapsAnswerEnvelope);
    if (!opened) throw new Error('the lookup does not open');
    return opened;
  }

  /** An answer sealed as the extension seals it; `lookupId` in the seal may differ (a test's forgery). */
  sealAnswer(lookupId: string, result: unknown, options: { sealedFor?: string } = {}): MapsAnswerEnvelope {
    if (!this.kid) throw new Error('agree a key first');
    const boundTo = options.sealedFor ?? lookupId;
    const nonce = randomBytes(12);
    const plain = Buffer.from(JSON.stringify({ v: 1, lookup_id: boundTo, result }), 'utf8');
    const aad = mapsAadOf(this.label, this.kid, this.deviceId, boundTo);
    const ct = chachaSeal(this.key('maps device-to-host'), nonce, aad, plain);
    return { v: 1, device_id: this.deviceId, kid: this.kid, lookup_id: boundTo, nonce: b64(nonce), ct: b64(ct) };
  }

  /** `POST /location/maps/{id}` with an envelope. */
  postAnswer(lookupId: string, envelope: unknown): Promise<Answer> {
    return this.mapsCall('POST', lookupId, {}, envelope);
  }

  answer(lookupId: string, result: unknown): Promise<Answer> {
    return this.postAnswer(lookupId, this.sealAnswer(lookupId, result));
  }
}
