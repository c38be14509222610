import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENTS_TOPIC } from '../../src/conference/conference-session.js';
import {
  runGatewayExpectingFailure,
  startGatewayProcess,
  type GatewayProcess,
} from '../../src/testing/gateway-process.js';
import { startLiveKitTestServer, type LiveKitTestServer } from '../livekit-server/livekit-test-server.js';
import { API_KEY, API_SECRET, TestParticipant } from './conference-harness.js';

/** The gateway process started by `npm run voice` with LIVEKIT_* set: Conference mode next to the direct endpoint. */
describe('the gateway process in Conference mode', () => {
  let server: LiveKitTestServer;
  let gateway: GatewayProcess;
  let alice: TestParticipant | undefined;
  const room = `process-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    server = await startLiveKitTestServer({ apiKey: API_KEY, apiSecret: API_SECRET });
    gateway = await startGatewayProcess({
      HERMES_REALTIME_API_KEY: 'process-key',
      HERMES_REALTIME_VAD_BACKEND: 'rms',
      LIVEKIT_URL: server.url,
      LIVEKIT_API_KEY: API_KEY,
      LIVEKIT_API_SECRET: API_SECRET,
      LIVEKIT_ROOM: room,
      LIVEKIT_AGENT_NAME: 'Mira',
      LIVEKIT_ALLOWED_USERS: 'alice',
      LIVEKIT_PRESENCE_POLL_INTERVAL: '0.2',
    });
  });

  afterAll(async () => {
    await alice?.leave();
    await gateway?.stop();
    await server?.close();
  });

  it('joins the configured room as hermes-<name> and answers a typed turn with the configured agent', async () => {
    alice = await TestParticipant.join(server, 'alice', room);
    await alice.sees('hermes-mira');
    const agent = alice.room.remoteParticipants.get('hermes-mira');
    expect(agent?.name).toBe('Mira');
    await alice.waitForType('session.created');
    const heard = alice.hearsAgent('hermes-mira', 500);
    await alice.send(EVENTS_TOPIC, {
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello there' }] },
    });
    await alice.send(EVENTS_TOPIC, { type: 'response.create' });
    const done = await alice.waitForType('response.done');
    expect(done).toMatchObject({ response: { status: 'completed' } });
    // The echo agent (nothing else configured) answered through espeak-ng speech on hermes-voice.
    const transcript = alice.events.find((event) => event.type === 'response.output_audio_transcript.done');
    expect(String(transcript?.transcript)).toContain('hello there');
    await heard;
    const output = gateway.output();
    expect(output).toContain('"event":"conference_configured"');
    expect(output).not.toContain(API_SECRET);
  });

  it('refuses to start with LIVEKIT_URL but no key and secret, naming them', async () => {
    const refused = await runGatewayExpectingFailure({
      HERMES_REALTIME_API_KEY: 'process-key',
      LIVEKIT_URL: server.url,
    });
    expect(refused.code).toBe(1);
    expect(refused.output).toContain('LIVEKIT_API_KEY and LIVEKIT_API_SECRET are required');
  });
});
