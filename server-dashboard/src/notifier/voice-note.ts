/** Hermes' note on a turn delegated from a live spoken conversation (fallback when Hermes does not name it). */
export const VOICE_LIVE_PREFIX = '[Note: this message is a delegation from a live spoken conversation';

export const PERSONA_VOICE_NOTE =
  '[Spoken reply: keep your usual personality through word choice and tone, but everything you write will be read aloud, so write only words meant to be spoken. No stage directions or narrated actions (for example *sets down the gavel*), no sound effects, no emoji, no markdown.]';

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        part && typeof part === 'object' && 'text' in part && typeof part.text === 'string' ? part.text : '',
      )
      .join('');
  }
  return '';
}

/** The persona note when the turn's last user message is a voice delegation, else null. */
export function voicePersonaNote(history: unknown, userMessage: unknown): string | null {
  let last = typeof userMessage === 'string' ? userMessage : '';
  if (!last && Array.isArray(history)) {
    for (let i = history.length - 1; i >= 0; i--) {
      const item: unknown = history[i];
      if (item && typeof item === 'object' && 'role' in item && item.role === 'user') {
        last = messageText('content' in item ? item.content : '');
        break;
      }
    }
  }
  return last.trimStart().startsWith(VOICE_LIVE_PREFIX) ? PERSONA_VOICE_NOTE : null;
}
