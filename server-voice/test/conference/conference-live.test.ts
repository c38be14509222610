import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ScriptedAgent } from '../../src/agent/scripted-agent.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import {
  TestParticipant,
  conferenceConfig,
  speech,
  startGateway,
  type GatewayUnderTest,
} from './conference-harness.js';

/**
 * Against a real LiveKit server (LiveKit Cloud or self-hosted): runs when LIVEKIT_URL, LIVEKIT_API_KEY and
 * LIVEKIT_API_SECRET are set, and says why it is skipped otherwise (CI has no LiveKit).
 */
const url = process.env.LIVEKIT_URL;
const apiKey = process.env.LIVEKIT_API_KEY;
const apiSecret = process.env.LIVEKIT_API_SECRET;
const live = Boolean(url && apiKey && apiSecret);
if (!live)
  console.log(
    'conference-live: skipped — set LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET to run Conference mode against a real LiveKit server',
  );

describe.skipIf(!live)('Conference mode against a real LiveKit server (LIVEKIT_URL)', () => {
  const tester = `conduit-live-${randomBytes(3).toString('hex')}`;
  let under: GatewayUnderTest | undefined;
  let participant: TestParticipant | undefined;

  afterAll(async () => {
    await under?.gateway.stop();
    await participant?.leave();
  });

  it('joins on presence, answers a spoken turn on conference.events and hermes-voice, and leaves', async () => {
    const config = conferenceConfig(url ?? '', {
      apiKey: apiKey ?? '',
      apiSecret: apiSecret ?? '',
      room: `conduit-live-${randomBytes(4).toString('hex')}`,
      allowedUsers: new Set([tester]),
      presencePollMs: 1_000,
    });
    under = startGateway(config, {
      agent: new ScriptedAgent(() => [{ delta: 'Hello from the live test.' }]),
      stt: new ScriptedSpeechToText(['hello']),
      tts: new ScriptedTextToSpeech(),
    });
    participant = await TestParticipant.join({ url: config.url }, tester, config.room, config);
    await under.reaches('joined');
    await participant.waitForType('session.created');
    const heard = participant.hearsAgent(under.gateway.agentIdentity);
    await participant.speak(speech(0.8));
    expect(await participant.waitForType('response.done')).toMatchObject({ response: { status: 'completed' } });
    await heard;
    const left = under.reaches('watching');
    await participant.leave();
    await left;
  });
});
