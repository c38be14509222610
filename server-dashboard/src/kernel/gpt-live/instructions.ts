/**
 * The persona a GPT-Live call starts with when Hermes does not provide its own voice persona (this host
 * cannot load Hermes' Python `LIVE_PERSONA`): spoken-conversation habits only, since the agent's own
 * personality arrives through the briefing.
 */
export const GPT_LIVE_PERSONA = [
  "You are the voice of the user's Hermes agent, talking with them in a live spoken conversation.",
  'Speak naturally and briefly, the way people talk on a call: short sentences, no lists, no markdown,',
  'no emoji, and no stage directions. If you are interrupted, stop and listen. If you did not catch',
  'something, ask again rather than guessing.',
].join(' ');

const OPENING_APPLIES = 'This applies whatever the persona above says.';

/** Where the model starts: silent until the user speaks, greeting first, or opening a call Hermes placed. */
export type Opening = { kind: 'wait' } | { kind: 'greet'; greeting: string } | { kind: 'call'; briefed: boolean };

function openingPolicy(opening: Opening): string {
  switch (opening.kind) {
    case 'wait':
      return (
        'Opening policy: do not speak first. When the call starts, stay silent until the user speaks, ' +
        `then answer what they said. ${OPENING_APPLIES}`
      );
    case 'greet': {
      const say = opening.greeting ? ` Say: "${opening.greeting}"` : '';
      return (
        'Opening policy: speak first. As soon as the call starts, greet the user in one short sentence so ' +
        `they know you're there and listening.${say} Then wait for them. ${OPENING_APPLIES}`
      );
    }
    case 'call':
      // A call Hermes placed: the briefing says why; without one the model must not invent a reason.
      return opening.briefed
        ? 'Opening policy: speak first. You placed this call to the user. As soon as the call starts, open ' +
            'it the way the briefing above says, in one or two short sentences, then wait for them. ' +
            OPENING_APPLIES
        : 'Opening policy: speak first. You placed this call to the user. As soon as the call starts, say ' +
            "in one short sentence that you're calling them, without guessing why, then wait for them. " +
            OPENING_APPLIES;
  }
}

/**
 * The session instructions, in the reference's order: persona, the profile's extra sentences
 * (`voice.gpt_live.instructions`), the app's briefing, then the opening policy last, so it wins over
 * anything above it about who speaks first.
 */
export function sessionInstructions(parts: {
  persona: string;
  extra: string;
  briefing: string | undefined;
  opening: Opening;
}): string {
  return [parts.persona, parts.extra, parts.briefing ?? '', openingPolicy(parts.opening)]
    .filter((part) => part !== '')
    .join('\n\n');
}
