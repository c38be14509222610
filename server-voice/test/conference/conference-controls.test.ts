import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedAgent } from '../../src/agent/scripted-agent.js';
import { EVENTS_TOPIC, EXTENSIONS_TOPIC } from '../../src/conference/conference-session.js';
import { ScriptedSpeechToText, ScriptedTextToSpeech } from '../../src/providers/scripted.js';
import { SpeechProviderError, type TextToSpeech } from '../../src/providers/types.js';
import {
  openConferenceRoom,
  speech,
  within,
  type ConferenceRoom,
  type GatewayUnderTest,
  type TestParticipant,
} from './conference-harness.js';

/** The longest silence target: an utterance here ends by end-of-turn long before silence could end it. */
const SILENCE_SECONDS = 5;
/** end-of-turn → response.created well inside the 5 s the silence target would need. */
const END_OF_TURN_DEADLINE_MS = 3_500;

describe('Conference mode: conference.control pause / resume / end-of-turn and frame capture', () => {
  let room: ConferenceRoom;
  let under: GatewayUnderTest;
  let alice: TestParticipant;
  const stt = new ScriptedSpeechToText(['hello from alice']);

  /** Applies a control: an acknowledged event sent after it on the same ordered channel shows it was handled. */
  async function control(action: string): Promise<void> {
    const from = alice.events.length;
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.control', action });
    await alice.send(EVENTS_TOPIC, { type: 'session.update', session: {} });
    await alice.waitForType('session.updated', from);
  }

  /** Ends alice's turn with end-of-turn and resolves with response.created, which must come promptly. */
  async function endTurn(): Promise<void> {
    const from = alice.events.length;
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.control', action: 'end-of-turn' });
    await within(
      'response.created promptly after end-of-turn',
      (report) => {
        void alice.waitForType('response.created', from).then(report, () => undefined);
        return () => undefined;
      },
      END_OF_TURN_DEADLINE_MS,
    );
    await alice.waitForType('response.done', from);
  }

  beforeAll(async () => {
    room = await openConferenceRoom(
      { agent: new ScriptedAgent(() => [{ delta: 'Noted.' }]), stt },
      { gateway: { silenceSeconds: SILENCE_SECONDS } },
    );
    ({ under, alice } = room);
  });

  afterAll(() => room?.close());

  it('end-of-turn dispatches the sender’s utterance at once, without waiting for the silence target', async () => {
    const from = alice.events.length;
    await alice.speak(speech(0.8, 0.5, 0.2));
    await alice.waitForType('input_audio_buffer.speech_started', from);
    await endTurn();
    expect(alice.types(from)).toContain('input_audio_buffer.speech_stopped');
    expect(stt.calls).toHaveLength(1);
  });

  it('pause stops sampling the room’s audio; resume samples it again', async () => {
    await control('pause');
    expect(under.gateway.session?.paused).toBe(true);
    const from = alice.events.length;
    await alice.speak(speech(0.8, 0.5, 0.2));
    // Nothing was captured: end-of-turn has nothing to dispatch, and no speech started.
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.control', action: 'end_of_turn' });
    await control('resume');
    expect(alice.types(from).filter((type) => type.startsWith('input_audio_buffer.'))).toEqual([]);
    expect(stt.calls).toHaveLength(1);
    await alice.speak(speech(0.8, 0.5, 0.2));
    await alice.waitForType('input_audio_buffer.speech_started', from);
    await endTurn();
    expect(stt.calls).toHaveLength(2);
  });

  it('conference.capture_frame without a camera track reports the failure to the room', async () => {
    const from = alice.extensions.length;
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.capture_frame' });
    expect(await alice.waitForExtension('agent:frame-capture-failed', from)).toEqual({
      type: 'agent:frame-capture-failed',
      payload: { reason: 'no-video-track', identity: 'alice' },
    });
  });
});

describe('Conference mode: barge-in and typed turns', () => {
  let room: ConferenceRoom;
  let alice: TestParticipant;
  const agent = new ScriptedAgent((text) => [{ delta: `A long answer to ${text}.` }]);

  beforeAll(async () => {
    room = await openConferenceRoom(
      {
        agent,
        stt: new ScriptedSpeechToText(['tell me a long story']),
        // About eight seconds of speech per reply: long enough to talk over.
        tts: new ScriptedTextToSpeech({ samplesFor: (_text, rate) => rate * 8 }),
      },
      { gateway: { bargeIn: true } },
    );
    alice = room.alice;
  });

  afterAll(() => room?.close());

  it('a typed conference.message starts a turn for its sender', async () => {
    const from = alice.events.length;
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.message', text: '  what time is it  ' });
    await alice.waitForType('output_audio_buffer.started', from);
    expect(agent.turns.at(-1)?.text).toBe('what time is it');
    // Cancelled, so the next test starts quiet.
    await alice.send(EVENTS_TOPIC, { type: 'response.cancel' });
    expect(await alice.waitForType('response.done', from)).toMatchObject({ response: { status: 'cancelled' } });
  });

  it('barge-in: speech over a reply cancels it and clears its queued audio', async () => {
    const from = alice.events.length;
    await alice.speak(speech(0.8));
    await alice.waitForType('output_audio_buffer.started', from);
    const speaking = alice.events.length;
    await alice.speak(speech(0.6, 0, 0));
    const done = await alice.waitForType('response.done', speaking);
    expect(done).toMatchObject({ response: { status: 'cancelled' } });
    await alice.waitForType('input_audio_buffer.speech_started', speaking);
    const after = alice.types(speaking);
    expect(after).toContain('output_audio_buffer.cleared');
    expect(after).not.toContain('output_audio_buffer.stopped');
  });
});

describe('Conference mode: whole-reply fallback', () => {
  let room: ConferenceRoom;
  let under: GatewayUnderTest;
  let alice: TestParticipant;
  const tone = new ScriptedTextToSpeech();
  /** Streaming fails before any audio on the first clause; the whole reply then synthesizes normally. */
  let failures = 1;
  const tts: TextToSpeech = {
    label: 'fails-first',
    sampleRateHz: tone.sampleRateHz,
    synthesize(text, options) {
      if (failures > 0) {
        failures -= 1;
        return (async function* () {
          yield* [];
          throw new SpeechProviderError('provider unavailable');
        })();
      }
      return tone.synthesize(text, options);
    },
  };

  beforeAll(async () => {
    room = await openConferenceRoom({
      agent: new ScriptedAgent(() => [{ delta: 'First part. ' }, { delta: 'Second part.' }]),
      tts,
    });
    ({ under, alice } = room);
  });

  afterAll(() => room?.close());

  it('a speech failure before any audio is retried as one whole reply, heard on hermes-voice', async () => {
    const heard = alice.hearsAgent(under.gateway.agentIdentity);
    await alice.send(EXTENSIONS_TOPIC, { type: 'conference.message', text: 'go' });
    expect(await alice.waitForType('response.done')).toMatchObject({ response: { status: 'completed' } });
    await heard;
    await under.logged('the fallback', (entry) => entry.event === 'tts_fallback_whole_reply');
    expect(tone.texts).toEqual(['First part. Second part.']);
  });
});
