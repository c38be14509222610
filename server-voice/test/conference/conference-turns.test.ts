import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedAgent } from '../../src/agent/scripted-agent.js';
import { EVENTS_TOPIC, EXTENSIONS_TOPIC } from '../../src/conference/conference-session.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import { startLiveKitTestServer, type LiveKitTestServer } from '../livekit-server/livekit-test-server.js';
import {
  API_KEY,
  API_SECRET,
  TestParticipant,
  conferenceConfig,
  speech,
  startGateway,
  type GatewayUnderTest,
} from './conference-harness.js';

/** The canonical order of a spoken turn's events (CONTRACT.md §2.2), as each participant sees the broadcast. */
const SPOKEN_TURN = [
  'input_audio_buffer.speech_started',
  'input_audio_buffer.speech_stopped',
  'input_audio_buffer.committed',
  'conversation.item.added',
  'conversation.item.input_audio_transcription.completed',
  'conversation.item.done',
  'response.created',
];

describe('Conference mode: Hermes joins a LiveKit room (real @livekit/rtc-node against the test server)', () => {
  let server: LiveKitTestServer;
  let under: GatewayUnderTest;
  let alice: TestParticipant;
  let bob: TestParticipant;
  let observer: TestParticipant;
  const config = { room: '' };
  const stt = new ScriptedSpeechToText((audio) => `utterance of ${Math.round(audio.pcm.length / 4800) / 10} s`);
  const agent = new ScriptedAgent((text) => [{ delta: `You said ${text}.` }]);

  beforeAll(async () => {
    server = await startLiveKitTestServer({ apiKey: API_KEY, apiSecret: API_SECRET });
    const conference = conferenceConfig(server.url);
    config.room = conference.room;
    under = startGateway(conference, { agent, stt, tts: new ScriptedTextToSpeech() });
  });

  afterAll(async () => {
    await under?.gateway.stop();
    await Promise.allSettled([alice?.leave(), bob?.leave(), observer?.leave()]);
    await server?.close();
  });

  it('stays out of an empty room and of a room with only participants who are not allowed', async () => {
    observer = await TestParticipant.join(server, 'observer', config.room);
    // Two presence polls that saw the observer (the first may have started before it joined).
    await under.nextPoll();
    expect(await under.nextPoll()).toEqual(['observer']);
    expect(under.gateway.state).toBe('watching');
    expect(observer.room.remoteParticipants.has(under.gateway.agentIdentity)).toBe(false);
  });

  it('joins when an allowed participant arrives, publishes hermes-voice and greets them with session.created', async () => {
    const joined = under.reaches('joined');
    alice = await TestParticipant.join(server, 'alice', config.room);
    await joined;
    await alice.sees(under.gateway.agentIdentity);
    const created = await alice.waitForType('session.created');
    expect(created).toMatchObject({ session: { type: 'realtime', model: 'hermes' } });
    expect(String(created.event_id)).toMatch(new RegExp(`^evt_${config.room}_\\d+_[0-9a-f]{8}$`));
    const agentInRoom = alice.room.remoteParticipants.get(under.gateway.agentIdentity);
    expect([...(agentInRoom?.trackPublications.values() ?? [])].map((publication) => publication.name)).toEqual([
      'hermes-voice',
    ]);
    // The observer is not allowed: no session for it.
    expect(observer.events).toEqual([]);
  });

  it('a spoken turn: the contract events in order on conference.events and a spoken reply on hermes-voice', async () => {
    const from = alice.events.length;
    const heard = alice.hearsAgent(under.gateway.agentIdentity);
    await alice.speak(speech(0.8));
    const done = await alice.waitForType('response.done', from);
    expect(done).toMatchObject({ response: { status: 'completed' } });
    await alice.waitForType('output_audio_buffer.stopped', from);
    await heard;
    const types = alice.types(from);
    expect(types.slice(0, SPOKEN_TURN.length)).toEqual(SPOKEN_TURN);
    expect(types).toContain('output_audio_buffer.started');
    const transcript = alice.events.slice(from).find((event) => event.type === 'response.output_audio_transcript.done');
    expect(transcript?.transcript).toMatch(/^You said utterance of \d/);
    expect(agent.turns.at(-1)?.sessionKey).toBe(`livekit:${config.room}`);
    // After playout, capture stays paused for LiveKit's 300 ms echo guard.
    expect(under.delays).toContain(300);
  });

  it('targets: session.created and session.updated go to their participant only; broadcasts reach everyone', async () => {
    bob = await TestParticipant.join(server, 'bob', config.room);
    await bob.waitForType('session.created');
    const aliceFrom = alice.events.length;
    await alice.send(EVENTS_TOPIC, { type: 'session.update', session: { instructions: 'Be brief.' } });
    const updated = await alice.waitForType('session.updated', aliceFrom);
    expect(updated).toMatchObject({ session: { instructions: 'Be brief.' } });
    // An invalid event from bob: the error is his alone.
    await bob.send(EVENTS_TOPIC, { type: 'no.such.event', event_id: 'evt_bob_1' });
    const error = await bob.waitForType('error');
    expect(error).toMatchObject({ error: { code: 'unsupported_client_event', event_id: 'evt_bob_1' } });
    // Bob speaks: the turn is broadcast, so alice sees it too; she never saw bob's error nor bob his session.updated.
    const bobFrom = bob.events.length;
    await bob.speak(speech(0.6));
    await Promise.all([bob.waitForType('response.done', bobFrom), alice.waitForType('response.done', aliceFrom)]);
    expect(alice.events.slice(aliceFrom).filter((event) => event.type === 'error')).toEqual([]);
    expect(bob.types()).not.toContain('session.updated');
    expect(alice.types().filter((type) => type === 'session.created')).toHaveLength(1);
  });

  it('hermes.input_audio.state: acknowledged on conference.extensions; refused on conference.events', async () => {
    const from = alice.events.length;
    await alice.send(EVENTS_TOPIC, { type: 'hermes.input_audio.state', muted: true });
    const refused = await alice.waitForType('error', from);
    expect(refused).toMatchObject({
      error: { code: 'unsupported_client_event', message: 'Input audio state is not supported by this transport' },
    });
    await alice.send(EXTENSIONS_TOPIC, { type: 'hermes.input_audio.state', muted: true });
    expect(await alice.waitForExtension('hermes.input_audio.state_updated')).toEqual({
      type: 'hermes.input_audio.state_updated',
      muted: true,
    });
    // Muted: her speech is not heard. Unknown extension types are ignored. Unmuted, she is heard again.
    await alice.speak(speech(0.6));
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.something_new' });
    const extFrom = alice.extensions.length;
    await alice.send(EXTENSIONS_TOPIC, { type: 'hermes.input_audio.state', muted: false });
    await alice.waitForExtension('hermes.input_audio.state_updated', extFrom);
    const turnsBefore = stt.calls.length;
    const speechFrom = alice.events.length;
    await alice.speak(speech(0.6));
    await alice.waitForType('response.done', speechFrom);
    // The muted utterance never reached speech-to-text: exactly one transcription since.
    expect(stt.calls.length).toBe(turnsBefore + 1);
    expect(bob.extensions.filter((event) => event.type === 'hermes.input_audio.state_updated')).toEqual([]);
  });

  it('overlapping speakers each get their own input item, transcript and turn', async () => {
    const from = alice.events.length;
    const calls = stt.calls.length;
    const ofType = (type: string) => alice.events.slice(from).filter((event) => event.type === type);
    // Bob starts while alice is still speaking; his long tail keeps audio flowing past the agent's reply.
    await Promise.all([alice.speak(speech(0.8)), bob.speak(speech(0.8, 0.7, 3))]);
    await alice.waitForEvent(
      'both transcripts',
      () => ofType('conversation.item.input_audio_transcription.completed').length >= 2,
      from,
    );
    const started = ofType('input_audio_buffer.speech_started').map((event) => event.item_id);
    const stopped = ofType('input_audio_buffer.speech_stopped').map((event) => event.item_id);
    const transcribed = ofType('conversation.item.input_audio_transcription.completed').map((event) => event.item_id);
    expect(new Set(started).size).toBe(2);
    expect(new Set(stopped)).toEqual(new Set(started));
    expect(new Set(transcribed)).toEqual(new Set(started));
    expect(stt.calls.length).toBe(calls + 2);
    await alice.waitForEvent('the second response to finish', () => ofType('response.done').length >= 2, from);
  });

  it('leaves once no allowed participant is left, and joins again when one returns', async () => {
    const left = under.reaches('watching');
    const observerSees = observer.seesLeave(under.gateway.agentIdentity);
    await alice.leave();
    await bob.leave();
    await left;
    await observerSees;
    const joined = under.reaches('joined');
    alice = await TestParticipant.join(server, 'alice', config.room);
    await joined;
    await alice.waitForType('session.created');
  });
});

/** A dropped agent is back within this (the SDK's reconnect takes ~15 s against the test server). */
const RECONNECT_DEADLINE_MS = 60_000;

describe('Conference mode: the server drops the gateway', () => {
  let server: LiveKitTestServer;
  let under: GatewayUnderTest;
  let alice: TestParticipant;

  beforeAll(async () => {
    server = await startLiveKitTestServer({ apiKey: API_KEY, apiSecret: API_SECRET });
    const conference = conferenceConfig(server.url);
    under = startGateway(conference, {
      agent: new ScriptedAgent(() => [{ delta: 'Back again.' }]),
      stt: new ScriptedSpeechToText(['are you there']),
      tts: new ScriptedTextToSpeech(),
    });
    alice = await TestParticipant.join(server, 'alice', conference.room);
    await under.reaches('joined');
    await alice.sees(under.gateway.agentIdentity);
  });

  afterAll(async () => {
    await under?.gateway.stop();
    await alice?.leave();
    await server?.close();
  });

  it('reconnects, publishes again and answers the next spoken turn', async () => {
    const gone = alice.seesLeave(under.gateway.agentIdentity);
    expect(await server.dropParticipant(under.gateway.agentIdentity)).toBe(true);
    await gone;
    // The SDK's resume is refused (this server keeps no session), and its full reconnect waits out the
    // publisher connection timeout (about 15 s) first.
    await alice.sees(under.gateway.agentIdentity, RECONNECT_DEADLINE_MS);
    await under.reaches('joined');
    const from = alice.events.length;
    const heard = alice.hearsAgent(under.gateway.agentIdentity);
    await alice.speak(speech(0.6));
    expect(await alice.waitForType('response.done', from)).toMatchObject({ response: { status: 'completed' } });
    await heard;
  }, 120_000);

  it('a join the server refuses is retried with backoff, and the gateway gives up after the attempts allowed', async () => {
    const refused = startGateway(
      conferenceConfig(server.url, { apiSecret: 'not-the-secret-the-server-knows', room: 'refused-room' }),
      {
        agent: new ScriptedAgent(() => []),
        stt: new ScriptedSpeechToText(['x']),
        tts: new ScriptedTextToSpeech(),
      },
      // Presence says someone is there, so every attempt tries to join and is refused (401).
      { listParticipants: () => Promise.resolve(['alice']), maxReconnectAttempts: 2 },
    );
    try {
      await refused.reaches('failed');
      const states = refused.logger.lines
        .map((line) => JSON.parse(line) as { event: string; state?: string })
        .filter((entry) => entry.event === 'conference_state')
        .map((entry) => entry.state);
      // Three joins (the first and two retries), each refused, then it stops trying.
      expect(states.filter((state) => state === 'joining')).toHaveLength(3);
      expect(states.at(-1)).toBe('failed');
      expect(refused.logger.lines.filter((line) => line.includes('conference_join_failed'))).toHaveLength(3);
      expect(refused.logger.lines.join('\n')).not.toContain('not-the-secret');
    } finally {
      await refused.gateway.stop();
    }
  });
});
