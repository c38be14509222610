import { AdaptiveRmsGate } from './energy-gate.js';
import type { SpeechGate, VoiceDetector, VoiceDetectorFactory } from './types.js';

/** The energy backend: no model, so scoring is free and the gate decides from RMS alone. */
export class EnergyVoiceDetector implements VoiceDetector {
  readonly backend = 'rms' as const;

  score(_pcm: Int16Array): Promise<number | null> {
    return Promise.resolve(null);
  }

  createGate(): SpeechGate {
    return new AdaptiveRmsGate();
  }

  close(): void {}
}

export class EnergyDetectorFactory implements VoiceDetectorFactory {
  readonly backend = 'rms' as const;

  create(): VoiceDetector {
    return new EnergyVoiceDetector();
  }
}
