import { bytesToPcm, pcmToBytes } from './pcm.js';

/** Mono PCM16 audio decoded from a WAV file. */
export interface WavAudio {
  pcm: Int16Array;
  sampleRateHz: number;
}

/** A WAV (RIFF, PCM16 mono) file of `pcm` at `sampleRateHz`. */
export function encodeWav(pcm: Int16Array, sampleRateHz: number): Buffer {
  const data = pcmToBytes(pcm);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRateHz, 24);
  header.writeUInt32LE(sampleRateHz * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

/**
 * Decodes a PCM16 mono WAV, walking the RIFF chunks (writers add LIST/fact chunks, and streaming writers leave
 * the data size at 0 or 0xFFFFFFFF, meaning "to the end of the file"). Anything else is rejected.
 */
export function decodeWav(file: Uint8Array): WavAudio {
  const bytes = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (bytes.length < 12 || bytes.toString('ascii', 0, 4) !== 'RIFF' || bytes.toString('ascii', 8, 12) !== 'WAVE')
    throw new Error('not a RIFF/WAVE file');
  let offset = 12;
  let sampleRateHz: number | null = null;
  while (offset + 8 <= bytes.length) {
    const id = bytes.toString('ascii', offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > bytes.length) throw new Error('truncated fmt chunk');
      const format = bytes.readUInt16LE(body);
      const channels = bytes.readUInt16LE(body + 2);
      const bits = bytes.readUInt16LE(body + 14);
      if (format !== 1 || channels !== 1 || bits !== 16)
        throw new Error(`unsupported WAV format ${format}, ${channels} channel(s), ${bits} bits: need PCM16 mono`);
      sampleRateHz = bytes.readUInt32LE(body + 4);
    } else if (id === 'data') {
      if (sampleRateHz === null) throw new Error('WAV data before fmt chunk');
      const available = bytes.length - body;
      const length = size === 0 || size === 0xffffffff || size > available ? available : size;
      return { pcm: bytesToPcm(bytes.subarray(body, body + length - (length % 2))), sampleRateHz };
    }
    offset = body + size + (size % 2);
  }
  throw new Error('WAV file has no data chunk');
}
