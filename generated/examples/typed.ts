// TypeScript (strict): paths, bodies and answers are typed from the locked OpenAPI snapshots, so a
// wrong path or field is a compile error; the Zod contracts give the same types at run time.
import { createRelayClient } from '@conduit/sdk/relay';
import { voice } from '@conduit/sdk';

export async function relayIsUp(baseUrl: string): Promise<boolean> {
  const relay = createRelayClient({ baseUrl });
  const { data, response } = await relay.GET('/healthz');
  // data is { ok: boolean } | undefined: anything else would not compile.
  return response.status === 200 && data?.ok === true;
}

/** Whether a Realtime client event type is one the voice gateway's `oai-events` channel knows. */
export function isClientEventType(type: string): type is voice.ClientEventType {
  return (voice.CLIENT_EVENT_TYPES as readonly string[]).includes(type);
}

export async function wrongOnPurpose(baseUrl: string): Promise<void> {
  const relay = createRelayClient({ baseUrl });
  // @ts-expect-error -- the relay has no such route
  await relay.GET('/v1/nothing-here');
  // @ts-expect-error -- environment must be "production"
  await relay.POST('/v1/installations', { body: { device_token: 'ab', bundle_id: 'x', environment: 'sandbox' } });
}
