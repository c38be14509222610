import path from 'node:path';
import type { ARTIFACT_SOURCES } from '@conduit/contracts/dashboard/artifacts';
import { fileKind, isWrittenArtifactKind, type ArtifactKind } from './artifact-kinds.js';

export type ArtifactSource = (typeof ARTIFACT_SOURCES)[number];

/** One row of Hermes' `messages` as this feature reads it, with its session's title and folder. */
export interface StoredMessage {
  id: number;
  sessionId: string;
  role: string;
  content: string | null;
  /** The assistant's tool calls as Hermes stores them (OpenAI's JSON list), or null. */
  toolCalls: string | null;
  /** The tool a `tool` row answers for (later schemas), or null. */
  toolName: string | null;
  /** Seconds since the epoch. */
  timestamp: number | null;
  sessionTitle: string | null;
  /** The session's working folder (later schemas), where its relative paths start. */
  cwd: string | null;
}

/** Something a message mentions: a file on this host or a web address. */
export type Mention =
  | { kind: ArtifactKind; source: ArtifactSource; name: string; path: string }
  | { kind: ArtifactKind; source: ArtifactSource; name: string; url: string; host: string };

/** The key a page lists a mention under once: its path or its normalized URL. */
export function mentionKey(mention: Mention): string {
  return 'path' in mention ? `file:${mention.path}` : `url:${new URL(mention.url).href}`;
}

/** The longest path or URL read; longer ones are not real references. */
const MAX_REFERENCE_CHARS = 4096;
const MAX_URL_CHARS = 2000;
const MAX_NAME_CHARS = 200;

// Hermes' MEDIA tag (gateway/platforms/base.py `extract_media`): a quoted path, an absolute or `~/`
// path that may hold spaces when it ends in a known extension, else a path up to whitespace.
const MEDIA_EXTENSIONS = [
  'png',
  'jpe?g',
  'gif',
  'webp',
  'bmp',
  'heic',
  'svg',
  'mp4',
  'mov',
  'm4v',
  'avi',
  'mkv',
  'webm',
  'ogg',
  'opus',
  'mp3',
  'wav',
  'm4a',
  'flac',
  'aac',
  'epub',
  'pdf',
  'zip',
  'rar',
  '7z',
  'docx?',
  'xlsx?',
  'pptx?',
  'txt',
  'csv',
  'md',
  'html?',
  'apk',
  'ipa',
];
/** `png` → `[pP][nN][gG]`: the tag is case-sensitive (MEDIA:) but its extensions are not. */
function anyCase(pattern: string): string {
  return pattern.replace(/[a-z]/g, (letter) => `[${letter}${letter.toUpperCase()}]`);
}
const QUOTED = '`[^`\\n]+`|"[^"\\n]+"|\'[^\'\\n]+\'';
const PATH_START = '(?:~/|/|file://)';
const MEDIA_TAG = new RegExp(
  `MEDIA:[^\\S\\n]*(${QUOTED}` +
    `|${PATH_START}\\S+(?:[^\\S\\n]+\\S+)*?\\.(?:${anyCase(MEDIA_EXTENSIONS.join('|'))})(?=[\\s\`"',;:)\\]}]|$)` +
    `|${PATH_START}\\S+)`,
  'g',
);

// Hermes Desktop's inline page: `::preview{file="page.html"}` alone on its line (agent/prompt_builder.py).
const PREVIEW_LINE = /^[^\S\n]*::preview\{([^}\n]*)\}[^\S\n]*$/gm;
const DIRECTIVE_ATTRIBUTE = /([A-Za-z_][\w-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'}]+))/g;

// Hermes' `@file:` reference (agent/context_references.py REFERENCE_PATTERN): quoted, or up to
// whitespace, with an optional `:start-end` line range.
const FILE_REFERENCE = new RegExp(`(?<![\\w/])@file:(?:(${QUOTED})(?::\\d+(?:-\\d+)?)?|(\\S+))`, 'g');
const LINE_RANGE = /:\d+(?:-\d+)?$/;
// Hermes appends the expanded references to the stored user message; only what the user typed counts.
const EXPANSION_MARKERS = ['\n\n--- Context Warnings ---', '\n\n--- Attached Context ---'];

const MARKDOWN_LINK = /!?\[([^\]\n]{0,300})\]\((https?:\/\/[^\s()]+(?:\([^\s()]*\)[^\s()]*)*)(?:\s+"[^"\n]*")?\)/g;
const BARE_URL = /https?:\/\/[^\s<>"'`[\]{}|\\^]+/g;

/** Tools whose arguments or results name a file they made (not read): write_file, patch, image_generate, text_to_speech… */
const WRITER_TOOL =
  /write|save|export|generat|render|download|convert|screenshot|patch|creat|edit|record|speech|tts|draw|plot|chart/i;
/** Argument and result fields that name such a file. */
const PATH_FIELDS = new Set([
  'path',
  'file_path',
  'filepath',
  'file',
  'filename',
  'output',
  'output_path',
  'output_file',
  'outfile',
  'save_path',
  'saved_to',
  'saved_path',
  'destination',
  'dest',
  'target_path',
  'image_path',
  'audio_path',
  'video_path',
  'screenshot_path',
]);
// A V4A patch (Hermes' `patch` tool in patch mode) names the files it adds or rewrites.
const PATCH_FILE_LINE = /^\*\*\* (?:Add|Update) File: (.+)$/gm;

/** Fenced code blocks are examples, not deliveries: their text is blanked (lines kept). */
function withoutCodeBlocks(text: string): string {
  const lines = text.split('\n');
  let fence: string | null = null;
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] ?? '';
    const opener = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === null) {
      if (opener?.[1]) {
        fence = opener[1];
        lines[i] = '';
      }
    } else {
      if (opener?.[1]?.startsWith(fence)) fence = null;
      lines[i] = '';
    }
  }
  return lines.join('\n');
}

function unquote(value: string): string {
  const first = value[0];
  if (value.length >= 2 && (first === '`' || first === '"' || first === "'") && value.endsWith(first)) {
    return value.slice(1, -1).trim();
  }
  return value;
}

/**
 * Where a path written in a chat is on this host: `file://` decoded, `~` expanded (Hermes runs as this
 * service's user), a relative path from the session's folder. A relative path with no folder known
 * is kept as written (listed as missing). Null for what is not a path.
 */
function locate(raw: string, cwd: string | null, homeDir: string): string | null {
  let value = raw.trim();
  if (value.startsWith('file://')) {
    try {
      value = decodeURIComponent(value.slice('file://'.length));
    } catch {
      return null;
    }
  }
  if (value === '' || value.length > MAX_REFERENCE_CHARS || value.includes('\0')) return null;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return null;
  if (value === '~' || value.startsWith('~/')) value = path.join(homeDir, value.slice(1));
  if (path.isAbsolute(value)) return path.normalize(value);
  if (cwd && path.isAbsolute(cwd)) return path.resolve(cwd, value);
  return value;
}

function clipName(name: string): string {
  const collapsed = name.replace(/\s+/g, ' ').trim();
  return collapsed.length > MAX_NAME_CHARS ? `${collapsed.slice(0, MAX_NAME_CHARS - 1).trimEnd()}…` : collapsed;
}

function fileMention(
  filePath: string,
  source: ArtifactSource,
  name?: string,
  kind: ArtifactKind = fileKind(filePath),
): Mention {
  return { kind, source, name: clipName(name || path.basename(filePath) || filePath), path: filePath };
}

/** A web address as a mention, or null when it is not an http(s) URL with a host. */
function urlMention(raw: string, source: ArtifactSource, kind: ArtifactKind, label?: string): Mention | null {
  if (raw.length > MAX_URL_CHARS) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return null;
  const fallback = `${url.host}${url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '')}`;
  const text = label?.replace(/[*_`]/g, '').trim();
  const name = text && text !== raw ? text : fallback;
  return { kind, source, name: clipName(name), url: raw, host: url.hostname };
}

/** `MEDIA:` tags: files a reply delivered (or, in a tool's output, files the tool made). */
function mediaTags(text: string, cwd: string | null, homeDir: string, source: ArtifactSource): Mention[] {
  const out: Mention[] = [];
  for (const match of text.matchAll(MEDIA_TAG)) {
    const raw = match[1] ?? '';
    const value = /^[`"']/.test(raw) ? unquote(raw) : raw.replace(/[`"',.;:)}\]]+$/, '');
    const located = locate(value, cwd, homeDir);
    if (located) out.push(fileMention(located, source));
  }
  return out;
}

/** `::preview{file="…"}` lines: pages shown inline, from a file or a URL. */
function previewDirectives(text: string, cwd: string | null, homeDir: string): Mention[] {
  const out: Mention[] = [];
  for (const line of text.matchAll(PREVIEW_LINE)) {
    const attributes = new Map<string, string>();
    for (const attribute of (line[1] ?? '').matchAll(DIRECTIVE_ATTRIBUTE)) {
      attributes.set((attribute[1] ?? '').toLowerCase(), (attribute[2] ?? attribute[3] ?? attribute[4] ?? '').trim());
    }
    const target = ['file', 'path', 'src', 'url', 'href'].map((key) => attributes.get(key)).find((value) => !!value);
    if (!target) continue;
    const title = attributes.get('title');
    if (/^https?:\/\//i.test(target)) {
      const mention = urlMention(target, 'preview', 'page', title);
      if (mention) out.push(mention);
      continue;
    }
    const located = locate(target, cwd, homeDir);
    if (located) out.push(fileMention(located, 'preview', title, 'page'));
  }
  return out;
}

/** `@file:` references in what the user typed: files they sent. */
function fileReferences(text: string, cwd: string | null, homeDir: string): Mention[] {
  let typed = text;
  for (const marker of EXPANSION_MARKERS) {
    const at = typed.indexOf(marker);
    if (at !== -1) typed = typed.slice(0, at);
  }
  const out: Mention[] = [];
  for (const match of typed.matchAll(FILE_REFERENCE)) {
    const value = match[1] ? unquote(match[1]) : (match[2] ?? '').replace(/[,.;!?]+$/, '').replace(LINE_RANGE, '');
    const located = locate(unquote(value), cwd, homeDir);
    if (located) out.push(fileMention(located, 'attached'));
  }
  return out;
}

/** Web links in a reply: Markdown links (their text is the name), then bare URLs. */
function webLinks(text: string): Mention[] {
  const out: Mention[] = [];
  const rest = text.replace(MARKDOWN_LINK, (whole, label: string, url: string) => {
    const mention = urlMention(url, 'link', 'link', label);
    if (mention) out.push(mention);
    return ' '.repeat(whole.length);
  });
  for (const match of rest.matchAll(BARE_URL)) {
    let url = match[0];
    // Sentence punctuation and an unbalanced closing bracket end a bare URL, as chat clients read it.
    for (;;) {
      const trimmed = url.replace(/[.,;:!?*_~'"]+$/, '');
      const unbalanced = trimmed.endsWith(')') && trimmed.split('(').length < trimmed.split(')').length;
      const next = unbalanced ? trimmed.slice(0, -1) : trimmed;
      if (next === url) break;
      url = next;
    }
    const mention = urlMention(url, 'link', 'link');
    if (mention) out.push(mention);
  }
  return out;
}

function parseJson(text: string | null): unknown {
  if (!text) return null;
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return null;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return null;
  }
}

/** String values of PATH_FIELDS in a JSON value, a few levels deep (tool results nest them in `data`). */
function pathFields(value: unknown, depth = 0, found: string[] = []): string[] {
  if (depth > 3 || found.length >= 20 || value === null || typeof value !== 'object') return found;
  if (Array.isArray(value)) {
    for (const item of value.slice(0, 20)) pathFields(item, depth + 1, found);
    return found;
  }
  for (const [key, field] of Object.entries(value)) {
    if (typeof field === 'string' && PATH_FIELDS.has(key.toLowerCase())) found.push(field);
    else if (typeof field === 'object') pathFields(field, depth + 1, found);
  }
  return found;
}

/** Files the assistant's tool calls wrote: a writer tool's path arguments and the files its patch adds. */
function writtenByToolCalls(toolCalls: string | null, cwd: string | null, homeDir: string): Mention[] {
  const calls = parseJson(toolCalls);
  if (!Array.isArray(calls)) return [];
  const out: Mention[] = [];
  for (const call of calls.slice(0, 50)) {
    if (call === null || typeof call !== 'object') continue;
    const record = call as { function?: { name?: unknown; arguments?: unknown }; name?: unknown; arguments?: unknown };
    const name = record.function?.name ?? record.name;
    if (typeof name !== 'string' || !WRITER_TOOL.test(name)) continue;
    const rawArguments = record.function?.arguments ?? record.arguments;
    const args = typeof rawArguments === 'string' ? parseJson(rawArguments) : rawArguments;
    if (args === null || typeof args !== 'object' || Array.isArray(args)) continue;
    const candidates = Object.entries(args)
      .filter(([key, value]) => PATH_FIELDS.has(key.toLowerCase()) && typeof value === 'string')
      .map(([, value]) => value as string);
    const patch = (args as { patch?: unknown }).patch;
    if (typeof patch === 'string') for (const line of patch.matchAll(PATCH_FILE_LINE)) candidates.push(line[1] ?? '');
    for (const candidate of candidates) {
      const located = locate(candidate, cwd, homeDir);
      if (located && isWrittenArtifactKind(fileKind(located))) out.push(fileMention(located, 'written'));
    }
  }
  return out;
}

/** Files a tool's result names: its MEDIA tags, and (for a writer tool) its absolute path fields. */
function writtenByToolResult(message: StoredMessage, homeDir: string): Mention[] {
  const content = message.content ?? '';
  const out = mediaTags(content, message.cwd, homeDir, 'written');
  if (message.toolName && WRITER_TOOL.test(message.toolName)) {
    for (const candidate of pathFields(parseJson(content))) {
      const value = candidate.trim();
      if (!value.startsWith('/') && !value.startsWith('~/') && !value.startsWith('file://')) continue;
      const located = locate(value, message.cwd, homeDir);
      if (located) out.push(fileMention(located, 'written'));
    }
  }
  return out.filter((mention) => isWrittenArtifactKind(mention.kind));
}

/**
 * Everything one message mentions, in the order a page lists them: what its text shows before what
 * its tools did, so a file both written and delivered in one message reads as delivered. Each path
 * or URL once per message.
 */
export function mentionsOf(message: StoredMessage, homeDir: string): Mention[] {
  const content = message.content ?? '';
  let mentions: Mention[];
  if (message.role === 'assistant') {
    const prose = withoutCodeBlocks(content);
    const links = webLinks(prose.replace(PREVIEW_LINE, '').replace(MEDIA_TAG, ''));
    mentions = [
      ...mediaTags(prose, message.cwd, homeDir, 'delivered'),
      ...previewDirectives(prose, message.cwd, homeDir),
      ...links,
      ...writtenByToolCalls(message.toolCalls, message.cwd, homeDir),
    ];
  } else if (message.role === 'user') {
    mentions = fileReferences(content, message.cwd, homeDir);
  } else if (message.role === 'tool') {
    mentions = writtenByToolResult(message, homeDir);
  } else {
    mentions = [];
  }
  const seen = new Set<string>();
  return mentions.filter((mention) => {
    const key = mentionKey(mention);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
