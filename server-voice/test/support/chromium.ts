import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium, as ARCHITECTURE.md prescribes; CI installs it. A missing browser fails the test. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Headless Chromium with the suite's flags and a fake microphone (a WAV file when given, else a beep). */
export function launchChromium(options: { microphoneWav?: string } = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      ...(options.microphoneWav ? [`--use-file-for-fake-audio-capture=${options.microphoneWav}`] : []),
      '--autoplay-policy=no-user-gesture-required',
    ],
  });
}
