import type { WatchAudioEngine, watchAudioGrant } from '@conduit/contracts/dashboard/watch-audio';
import type { z } from 'zod';
import type { ProfileScope } from '../notifier/notifier.js';
import type { FeatureKernel } from './feature.js';

/** A Watch grant opened with `audio: true`, as the audio side needs it to dial the relay's bridge. */
export interface WatchAudioGrant {
  id: string;
  /** The grant's 32-byte root: each Watch connection's keys come from it. */
  root: Uint8Array;
  relayUrl: string;
  /** The profile's gateway credential (Bearer on the bridge's host side). */
  credential: string;
  profile: ProfileScope;
}

/** What the grant answers under `audio` (ROUTES.md, Watch tools). */
export type WatchAudioGrantAnswer = z.infer<typeof watchAudioGrant>;

/**
 * Where Watch tools (features/watch) and Watch audio (features/watch-audio) meet: the grant route opens
 * and closes the audio of a grant; everything about the bridge and the engines lives behind it.
 */
export interface WatchAudioPort {
  /** The engines a new grant offers. */
  offeredEngines(): Promise<WatchAudioEngine[]>;
  /** Dials the relay's bridge for the grant; null when the relay didn't take it in time. */
  open(grant: WatchAudioGrant, engines: WatchAudioEngine[]): Promise<WatchAudioGrantAnswer | null>;
  /** The grant closed: its call ends and its line hangs up. */
  close(grantId: string): Promise<void>;
}

const ports = new WeakMap<FeatureKernel, WatchAudioPort>();

/** Called by the Watch audio feature when it registers (one per app; tests build several apps). */
export function provideWatchAudio(kernel: FeatureKernel, port: WatchAudioPort): void {
  ports.set(kernel, port);
}

/** The app's Watch audio, or null when the feature is not registered (grants then refuse audio). */
export function watchAudioOf(kernel: FeatureKernel): WatchAudioPort | null {
  return ports.get(kernel) ?? null;
}
