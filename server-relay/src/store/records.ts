import type { Preferences } from '../domain/preferences.js';

/** A registered phone as the relay core works with it (timestamps in ms since the epoch). */
export interface InstallationRecord {
  id: string;
  bundleId: string;
  deviceToken: string;
  voipToken: string | null;
  watchVoipToken: string | null;
  /** The Location Push Service Extension's own APNs token; location pushes go here, never to deviceToken. */
  locationPushToken: string | null;
  environment: string;
  deviceSecretHash: string;
  active: boolean;
  preferences: Preferences;
  createdAt: number;
  updatedAt: number;
  /** When a host first claimed one of its pairing codes; null: never paired. */
  pairedAt: number | null;
  /** The device credential's latest use, stamped coarsely (see UnpairedExpiry); null: never. */
  lastSeenAt: number | null;
}

export interface GatewayRecord {
  installationId: string;
  id: string;
  name: string;
  secretHash: string;
  dashboardId: string | null;
  createdAt: number;
  pluginVersion: string | null;
  pluginCapabilities: string[] | null;
  lastEventAt: number | null;
}

export interface PairingRecord {
  codeHash: string;
  installationId: string;
  expiresAt: number;
  dashboardId: string | null;
}

/** Deferred gateway facts the event path records (written at most every 5 s and on shutdown). */
export interface GatewayActivity {
  pluginVersion?: string;
  pluginCapabilities?: string[];
  lastEventAt?: number;
}
