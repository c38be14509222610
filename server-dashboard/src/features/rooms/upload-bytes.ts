import path from 'node:path';
import { DetailError } from '../../kernel/detail-errors.js';

/** Standard or URL-safe base64, padded or not (what Swift's and browsers' encoders send). */
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function sizeLabel(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MB` : `${bytes / 1024} KB`;
}

/**
 * `data_base64` as bytes, refused before decoding when it cannot fit: 400 when missing or not base64,
 * 413 when it decodes to more than `maxBytes`.
 */
export function decodeBase64(value: unknown, maxBytes: number, what: string): Buffer {
  if (typeof value !== 'string') throw new DetailError(400, 'data_base64 is required');
  const compact = /\s/.test(value) ? value.replace(/\s+/g, '') : value;
  if (!BASE64.test(compact) || compact.replace(/=+$/, '').length % 4 === 1) {
    throw new DetailError(400, 'data_base64 is not base64');
  }
  const unpadded = compact.replace(/=+$/, '').length;
  if (Math.floor((unpadded * 3) / 4) > maxBytes) {
    throw new DetailError(413, `The ${what} is larger than ${sizeLabel(maxBytes)}`);
  }
  return Buffer.from(compact, 'base64');
}

/** An image format told by its first bytes. */
interface ImageFormat {
  label: string;
  mime: string;
  matches(bytes: Buffer): boolean;
}

const startsWith = (bytes: Buffer, signature: number[], at = 0) =>
  bytes.length >= at + signature.length && signature.every((byte, index) => bytes[at + index] === byte);
const ascii = (text: string) => [...text].map((char) => char.charCodeAt(0));
const ISO_BRANDS = /^(?:heic|heix|hevc|hevx|heim|heis|mif1|msf1|avif|avis)$/;

export const JPEG: ImageFormat = {
  label: 'JPEG',
  mime: 'image/jpeg',
  matches: (b) => startsWith(b, [0xff, 0xd8, 0xff]),
};
export const PNG: ImageFormat = {
  label: 'PNG',
  mime: 'image/png',
  matches: (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
};
const GIF: ImageFormat = {
  label: 'GIF',
  mime: 'image/gif',
  matches: (b) => startsWith(b, ascii('GIF87a')) || startsWith(b, ascii('GIF89a')),
};
const WEBP: ImageFormat = {
  label: 'WebP',
  mime: 'image/webp',
  matches: (b) => startsWith(b, ascii('RIFF')) && startsWith(b, ascii('WEBP'), 8),
};
const HEIF: ImageFormat = {
  label: 'HEIC',
  mime: 'image/heic',
  matches: (b) => startsWith(b, ascii('ftyp'), 4) && ISO_BRANDS.test(b.subarray(8, 12).toString('latin1')),
};

/**
 * The image types a room file's name may claim, each checked against the file's first bytes: a
 * photo named `.jpg` that is not a JPEG is refused rather than handed to the room's agents as one.
 * Other names are stored as sent (any file may be shared in a room).
 */
const IMAGE_EXTENSIONS: Record<string, ImageFormat> = {
  jpg: JPEG,
  jpeg: JPEG,
  jpe: JPEG,
  png: PNG,
  gif: GIF,
  webp: WEBP,
  heic: HEIF,
  heif: HEIF,
  avif: HEIF,
};

/** 415 when the name says an image type its bytes are not. */
export function checkClaimedImage(name: string, bytes: Buffer): void {
  const format = IMAGE_EXTENSIONS[path.extname(name).slice(1).toLowerCase()];
  if (format && !format.matches(bytes)) {
    throw new DetailError(415, `The file's contents are not a ${format.label} image, as its name says`);
  }
}

/** A room picture's type: JPEG or PNG by its bytes, else 415. */
export function pictureFormat(bytes: Buffer): ImageFormat & { mime: 'image/jpeg' | 'image/png' } {
  if (JPEG.matches(bytes)) return { ...JPEG, mime: 'image/jpeg' };
  if (PNG.matches(bytes)) return { ...PNG, mime: 'image/png' };
  throw new DetailError(415, 'The picture must be a JPEG or PNG');
}
