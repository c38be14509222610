// Plain JavaScript on Node 20.19+: a phone registers on a relay and makes a pairing code, a Hermes host
// claims it and sends an event; every answer is checked against the relay's Zod contracts.
import { createRelayClient, hostEvent, relaySurface } from '@conduit/sdk/relay';

const relay = createRelayClient({ baseUrl: process.env.RELAY_URL ?? 'http://127.0.0.1:9120' });
const { routes } = relaySurface;

const registered = await relay.POST('/v1/installations', {
  body: {
    device_token: 'ab'.repeat(32),
    bundle_id: process.env.APNS_TOPIC ?? 'com.example.conduit',
    environment: 'production',
  },
});
if (registered.error) throw new Error(`registration refused: ${registered.response.status} ${registered.error.error}`);
const phone = routes.registerInstallation.responses[201].schema.parse(registered.data);

const code = await relay.POST('/v1/installations/{id}/pairings', {
  params: { path: { id: phone.installation.id } },
  headers: { authorization: `Bearer ${phone.credential}` },
  body: {},
});
if (code.error) throw new Error(`no pairing code: ${code.response.status}`);

const claimed = await relay.POST('/v1/pairings/claim', {
  body: { pairing_code: code.data.pairing_code, gateway_name: 'Example host' },
});
if (claimed.error) throw new Error(`claim refused: ${claimed.response.status}`);
const host = routes.claimPairing.responses[200].schema.parse(claimed.data);

// hostEvent is the event payload's contract: parse() rejects a malformed event before it is sent.
const event = hostEvent.parse({
  type: 'response.ready',
  event_id: `example-${Date.now()}`,
  title: 'Hermes',
  body: 'The release notes are ready.',
});
const sent = await relay.POST('/v1/events', { body: event, headers: { authorization: `Bearer ${host.credential}` } });
console.log(
  JSON.stringify({
    installation: phone.installation.id,
    gateway: host.gateway_id,
    status: sent.response.status,
    answer: sent.data ?? sent.error,
  }),
);
