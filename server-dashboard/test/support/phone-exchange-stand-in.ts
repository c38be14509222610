import { randomBytes } from 'node:crypto';
import { TEST_TOKEN } from './config.js';
import { chachaOpen, chachaSeal, PhoneStandIn, type Answer } from './phone-stand-in.js';

/**
 * The Conduit app's side of POST /phone/exchange, in node:crypto apart from the host's code: the
 * exchange directions (`conduit-phone-v1 exchange device-to-host` / `host-to-device`) and associated
 * data `conduit-phone-v1 exchange <op>\n<kid>\n<device_id>\n<id>` as the contract describes them.
 */

export const exchangeAadOf = (label: string, op: string, kid: string, deviceId: string, id: string) =>
  `${label} exchange ${op}\n${kid}\n${deviceId}\n${id}`;

export interface ExchangeEnvelope {
  v: 1;
  op: 'changes' | 'voice';
  device_id: string;
  kid: string;
  exchange_id?: string;
  call_id?: string;
  nonce: string;
  ct: string;
}

export interface ChangeOut {
  id: string;
  ask: boolean;
  summary: string;
  created_at: number;
  expires_at: number;
  change: Record<string, unknown> & { kind: string };
}

export interface ChangesAnswer {
  exchange_id: string;
  changes: ChangeOut[];
  more: boolean;
  settled: number;
}

export type ResultIn = { id: string; outcome: string; item_id?: string; note?: string };

export class ExchangingPhone extends PhoneStandIn {
  private exchanges = 0;

  /** The envelope of `plain` (a string is sent as it is) sealed for `op` under id `id`. */
  sealExchange(op: 'changes' | 'voice', id: string, plain: unknown): ExchangeEnvelope {
    if (!this.kid) throw new Error('agree a key first');
    const nonce = randomBytes(12);
    const bytes = Buffer.from(typeof plain === 'string' ? plain : JSON.stringify(plain), 'utf8');
    const aad = exchangeAadOf(this.label, op, this.kid, this.deviceId, id);
    const ct = chachaSeal(this.key('exchange device-to-host'), nonce, aad, bytes);
    return {
      v: 1,
      op,
      device_id: this.deviceId,
      kid: this.kid,
      ...(op === 'changes' ? { exchange_id: id } : { call_id: id }),
      nonce: nonce.toString('base64url'),
      ct: ct.toString('base64url'),
    };
  }

  /** Opens the host's answer with the host-to-device key; null when it does not open. */
  openAnswer(envelope: ExchangeEnvelope): unknown {
    const id = envelope.op === 'changes' ? envelope.exchange_id : envelope.call_id;
    const opened = chachaOpen(
      this.key('exchange host-to-device'),
      Buffer.from(envelope.nonce, 'base64url'),
      exchangeAadOf(this.label, envelope.op, envelope.kid, envelope.device_id, id ?? ''),
      Buffer.from(envelope.ct, 'base64url'),
    );
    return opened === null ? null : (JSON.parse(opened.toString('utf8')) as unknown);
  }

  /** POST /phone/exchange with any body. */
  async postExchange(body: unknown): Promise<Answer> {
    const query = this.profile ? `?profile=${this.profile}` : '';
    const response = await fetch(`${this.hostUrl}/api/plugins/conduit_push/phone/exchange${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** One changes exchange: reports `results`, answers the opened answer (throws on a refusal). */
  async exchange(results: ResultIn[] = []): Promise<ChangesAnswer> {
    const id = `x-${this.deviceId}-${++this.exchanges}`;
    const answer = await this.postExchange(this.sealExchange('changes', id, { exchange_id: id, results }));
    if (answer.status !== 200) throw new Error(`exchange ${answer.status}: ${JSON.stringify(answer.body)}`);
    const opened = this.openAnswer(answer.body as unknown as ExchangeEnvelope);
    if (opened === null) throw new Error('the answer does not open');
    return opened as ChangesAnswer;
  }

  /** One op "voice" read: the opened `{call_id, result}`, or the refusal as it came. */
  async voice(tool: string, args: Record<string, unknown>, provider = 'gemini-live'): Promise<Answer> {
    const id = `v-${this.deviceId}-${++this.exchanges}`;
    const answer = await this.postExchange(this.sealExchange('voice', id, { call_id: id, tool, args, provider }));
    if (answer.status !== 200) return answer;
    return {
      status: 200,
      body: this.openAnswer(answer.body as unknown as ExchangeEnvelope) as Record<string, unknown>,
    };
  }
}
