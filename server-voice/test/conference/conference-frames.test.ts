import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedAgent } from '../../src/agent/scripted-agent.js';
import { EXTENSIONS_TOPIC } from '../../src/conference/conference-session.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import { startLiveKitTestServer, type LiveKitTestServer } from '../livekit-server/livekit-test-server.js';
import {
  API_KEY,
  API_SECRET,
  TestParticipant,
  conferenceConfig,
  startGateway,
  type GatewayUnderTest,
} from './conference-harness.js';

const WIDTH = 320;
const HEIGHT = 240;

describe('Conference mode: conference.capture_frame samples the sender’s camera for the next user message', () => {
  let server: LiveKitTestServer;
  let under: GatewayUnderTest;
  let alice: TestParticipant;
  let bob: TestParticipant;
  let stopCamera: (() => Promise<void>) | undefined;
  const agent = new ScriptedAgent(() => [{ delta: 'I see it.' }]);

  beforeAll(async () => {
    server = await startLiveKitTestServer({ apiKey: API_KEY, apiSecret: API_SECRET });
    const conference = conferenceConfig(server.url);
    under = startGateway(conference, {
      agent,
      stt: new ScriptedSpeechToText(['unused']),
      tts: new ScriptedTextToSpeech(),
    });
    alice = await TestParticipant.join(server, 'alice', conference.room);
    bob = await TestParticipant.join(server, 'bob', conference.room);
    await under.reaches('joined');
    await Promise.all([alice.waitForType('session.created'), bob.waitForType('session.created')]);
  });

  afterAll(async () => {
    await stopCamera?.();
    await under?.gateway.stop();
    await Promise.allSettled([alice?.leave(), bob?.leave()]);
    await server?.close();
  });

  it('without a camera the capture fails with no-video-track, reported to the room', async () => {
    const from = bob.extensions.length;
    await bob.send(EXTENSIONS_TOPIC, { type: 'conference.capture_frame' });
    expect(await bob.waitForExtension('agent:frame-capture-failed', from)).toEqual({
      type: 'agent:frame-capture-failed',
      payload: { reason: 'no-video-track', identity: 'bob' },
    });
  });

  it('a frame from the camera is announced, encoded as JPEG and attached to the sender’s next message', async () => {
    stopCamera = await alice.publishCamera(WIDTH, HEIGHT, [220, 30, 30]);
    const from = alice.extensions.length;
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.capture_frame' });
    const captured = await alice.waitForExtension('agent:frame-captured', from);
    expect(captured.payload).toMatchObject({ identity: 'alice', width: WIDTH, height: HEIGHT });
    const payload = captured.payload as { bytes: number; timestamp: string };
    expect(new Date(payload.timestamp).toISOString()).toBe(payload.timestamp);
    // Broadcast: bob learns of it too.
    await bob.waitForExtension('agent:frame-captured');

    const eventsFrom = alice.events.length;
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.message', text: 'what do you see?' });
    await alice.waitForType('response.done', eventsFrom);
    const turn = agent.turns.at(-1);
    expect(turn?.text).toBe('what do you see?');
    expect(turn?.images).toHaveLength(1);
    const jpeg = turn?.images?.[0]?.data ?? Buffer.alloc(0);
    expect(jpeg.byteLength).toBe(payload.bytes);
    const { data, info } = await sharp(jpeg).raw().toBuffer({ resolveWithObject: true });
    expect(info).toMatchObject({ format: 'raw', width: WIDTH, height: HEIGHT, channels: 3 });
    // The middle pixel is the camera's red, through VP8 and JPEG.
    const middle = ((HEIGHT / 2) * WIDTH + WIDTH / 2) * 3;
    expect(data[middle]).toBeGreaterThan(170);
    expect(data[middle + 1]).toBeLessThan(80);
    expect(data[middle + 2]).toBeLessThan(80);

    // Claimed once: the next message carries no frame.
    const nextFrom = alice.events.length;
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.message', text: 'and now?' });
    await alice.waitForType('response.done', nextFrom);
    expect(agent.turns.at(-1)?.images).toBeUndefined();
  });
});
