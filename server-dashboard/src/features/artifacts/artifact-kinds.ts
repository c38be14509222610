import path from 'node:path';
import type { ARTIFACT_KINDS } from '@conduit/contracts/dashboard/artifacts';

export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

/**
 * File kinds by extension. The media lists follow what Hermes' adapters deliver natively
 * (gateway/platforms/base.py); documents are what a person opens rather than what a program runs,
 * so a tool writing source code or config does not fill the Artifacts screens.
 */
const EXTENSION_KINDS: Record<string, ArtifactKind> = {};
const KIND_EXTENSIONS: [ArtifactKind, string[]][] = [
  ['image', ['png', 'jpg', 'jpeg', 'gif', 'webp', 'bmp', 'heic', 'heif', 'svg', 'tif', 'tiff', 'avif']],
  ['video', ['mp4', 'mov', 'm4v', 'avi', 'mkv', 'webm']],
  ['audio', ['ogg', 'opus', 'mp3', 'wav', 'm4a', 'flac', 'aac']],
  ['page', ['html', 'htm']],
  [
    'document',
    [
      'pdf',
      'doc',
      'docx',
      'xls',
      'xlsx',
      'ppt',
      'pptx',
      'odt',
      'ods',
      'odp',
      'rtf',
      'epub',
      'pages',
      'numbers',
      'key',
      'csv',
      'tsv',
      'md',
      'txt',
    ],
  ],
];
for (const [kind, extensions] of KIND_EXTENSIONS) for (const extension of extensions) EXTENSION_KINDS[extension] = kind;

/** The kind of a file by its name: `file` for anything not listed. */
export function fileKind(filePath: string): ArtifactKind {
  const extension = path.extname(filePath).slice(1).toLowerCase();
  return EXTENSION_KINDS[extension] ?? 'file';
}

/** Whether a tool's output of this kind counts as an artifact: documents and media, not code or data. */
export function isWrittenArtifactKind(kind: ArtifactKind): boolean {
  return kind === 'image' || kind === 'video' || kind === 'audio' || kind === 'document';
}
