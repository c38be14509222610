/**
 * The prompt-injection scan Hermes runs on SOUL.md before it becomes the agent's identity
 * (`_scan_context_content` in agent/prompt_builder.py): a file that matches any pattern, or holds an
 * invisible or direction-changing character, is not loaded at all; a marker naming what was found
 * stands in its place. The voice model gets the same text Hermes' own model would.
 */
const THREATS: readonly (readonly [RegExp, string])[] = [
  [/ignore\s+(previous|all|above|prior)\s+instructions/i, 'prompt_injection'],
  [/do\s+not\s+tell\s+the\s+user/i, 'deception_hide'],
  [/system\s+prompt\s+override/i, 'sys_prompt_override'],
  [/disregard\s+(your|all|any)\s+(instructions|rules|guidelines)/i, 'disregard_rules'],
  [/act\s+as\s+(if|though)\s+you\s+(have\s+no|don't\s+have)\s+(restrictions|limits|rules)/i, 'bypass_restrictions'],
  [/<!--[^>]*(?:ignore|override|system|secret|hidden)[^>]*-->/i, 'html_comment_injection'],
  [/<\s*div\s+style\s*=\s*["'][\s\S]*?display\s*:\s*none/i, 'hidden_div'],
  [/translate\s+.*\s+into\s+.*\s+and\s+(execute|run|eval)/i, 'translate_execute'],
  [/curl\s+[^\n]*\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)/i, 'exfil_curl'],
  [/cat\s+[^\n]*(\.env|credentials|\.netrc|\.pgpass)/i, 'read_secrets'],
];

/** Zero-width characters, the BOM, and the bidirectional embeddings and overrides. */
const INVISIBLE = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e'];

/** SOUL.md's text as Hermes loads it: unchanged, or the marker that replaces a file that failed the scan. */
export function scannedSoul(content: string): string {
  const findings = [
    ...INVISIBLE.filter((char) => content.includes(char)).map(
      (char) => `invisible unicode U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`,
    ),
    ...THREATS.filter(([pattern]) => pattern.test(content)).map(([, id]) => id),
  ];
  if (findings.length === 0) return content;
  return `[BLOCKED: SOUL.md contained potential prompt injection (${findings.join(', ')}). Content not loaded.]`;
}
