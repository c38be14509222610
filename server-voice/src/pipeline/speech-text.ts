/** Longest text sent to speech for one reply (the reference truncates at 4 000 characters). */
export const MAX_SPOKEN_CHARS = 4000;

/**
 * Cleans reply text for speech (AUDIO.md §7): code blocks, inline code, URLs, file paths and `MEDIA:` tags are
 * not read aloud; markdown punctuation is dropped; blank lines and runs of spaces collapse.
 */
export function prepareSpeechText(text: string): string {
  return text
    .replace(/```[\s\S]*?(```|$)/g, ' ')
    .replace(/`[^`\n]*`/g, ' ')
    .replace(/\bMEDIA:\S+/g, ' ')
    .replace(/\bhttps?:\/\/\S+/gi, ' ')
    .replace(/(^|\s)(~?\/[\w.-]+){2,}\/?/g, '$1')
    .replace(/[*_`#[\]()]/g, '')
    .replace(/\n\s*\n+/g, '\n')
    .replace(/[ \t]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .trim()
    .slice(0, MAX_SPOKEN_CHARS);
}

/** A clause shorter than this waits for more text at a comma (a sentence end always closes it). */
const MIN_COMMA_CLAUSE_CHARS = 40;
const SENTENCE_END = /[.!?…]["')\]]?(?=\s)|\n/g;
const SOFT_BREAK = /[,;:](?=\s)/g;

/**
 * Cuts streaming reply text into clauses that can be spoken while the rest is still being generated: at
 * sentence ends, at newlines, and at commas/semicolons once a clause is long enough to be worth a request.
 * Text inside an unfinished code block is held until the block closes, so its punctuation cannot split it.
 */
export class ClauseSplitter {
  private pending = '';

  /** Appends streamed text; returns the clauses it completed. */
  push(text: string): string[] {
    this.pending += text;
    const clauses: string[] = [];
    for (;;) {
      const cut = this.nextCut();
      if (cut === null) break;
      const clause = this.pending.slice(0, cut).trim();
      this.pending = this.pending.slice(cut);
      if (clause) clauses.push(clause);
    }
    return clauses;
  }

  /** The rest of the reply, at its end. */
  flush(): string[] {
    const rest = this.pending.trim();
    this.pending = '';
    return rest ? [rest] : [];
  }

  /** Forgets buffered text (the reply was replaced or cancelled). */
  reset(): void {
    this.pending = '';
  }

  private nextCut(): number | null {
    const text = this.pending;
    // An odd number of fences before a position means it sits inside a code block.
    const insideCode = (index: number) => (text.slice(0, index).match(/```/g)?.length ?? 0) % 2 === 1;
    const firstOutside = (pattern: RegExp, accept: (match: RegExpExecArray) => boolean): number | null => {
      pattern.lastIndex = 0;
      let match: RegExpExecArray | null;
      while ((match = pattern.exec(text))) {
        if (!insideCode(match.index) && accept(match)) return match.index + match[0].length;
      }
      return null;
    };
    const sentenceCut = firstOutside(SENTENCE_END, () => true);
    const softCut = firstOutside(SOFT_BREAK, (match) => match.index + 1 >= MIN_COMMA_CLAUSE_CHARS);
    if (sentenceCut !== null && (softCut === null || sentenceCut <= softCut)) return sentenceCut;
    return softCut;
  }
}
