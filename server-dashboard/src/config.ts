/** The host service's configuration, validated once at boot. */
export interface HostConfig {
  host: string;
  port: number;
  /** Version of the code this process loaded. */
  loadedVersion: string;
  /** Reads the version of the code on disk now (differs from loadedVersion after an update without restart). */
  readDiskVersion: () => string | null;
}

export class ConfigError extends Error {}
