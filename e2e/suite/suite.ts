/**
 * The whole suite on embedded defaults: relay, host service and voice gateway on local ports, state
 * under one data folder, no external account. Secrets it needs (the voice client key) are created
 * once in the data folder with mode 0600.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { assertPortFree, launch, type Launched } from './launch.js';

export interface SuitePorts {
  relay: number;
  host: number;
  voice: number;
}

export const DEFAULT_PORTS: SuitePorts = { relay: 9120, host: 9119, voice: 9130 };

/** The APNs topic the suite's relay serves; a simulated phone registers with it as its bundle id. */
export const SUITE_APNS_TOPIC = 'dev.conduit.local';

/** Where, under the data folder, the relay writes each push instead of sending it to Apple. */
export const CAPTURE_FILE = 'relay-apns-capture.jsonl';

const SERVER_NAMES: Record<keyof SuitePorts, string> = { relay: 'relay', host: 'host', voice: 'voice' };

/**
 * Fails with PortInUseError for the first of the suite's ports another program holds. Checked for all
 * three before anything starts, so a taken host or voice port is reported without a relay (or a data
 * folder a caller is about to reset) being touched first.
 */
export async function assertPortsFree(ports: SuitePorts): Promise<void> {
  for (const server of Object.keys(SERVER_NAMES) as (keyof SuitePorts)[]) {
    await assertPortFree(ports[server], SERVER_NAMES[server]);
  }
}

export interface Suite {
  dataDir: string;
  /** The Hermes home the host service serves. */
  hermesHome: string;
  /** The JSONL file the relay appends every push to (APNs capture mode). */
  capturePath: string;
  relay: Launched;
  host: Launched;
  voice: Launched;
  voiceApiKey: string;
  stop: () => Promise<void>;
  /**
   * Resolves when one server ends without being asked to (a crash, a kill), naming it; the caller
   * stops the rest. Never resolves after `stop()`.
   */
  unexpectedExit: Promise<{ server: Launched; code: number | null }>;
}

/** Reads a secret from the data folder, creating it (0600) on first use. */
function localSecret(dataDir: string, name: string): string {
  const file = path.join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  return secret;
}

/**
 * `hermesHome`: the Hermes home the host service serves (default: `<dataDir>/hermes`). Only the
 * one-command start passes the user's HERMES_HOME; tests never do, so they cannot write into a real one.
 */
export async function startSuite(
  dataDir: string,
  ports: SuitePorts = DEFAULT_PORTS,
  hermesHome: string = path.join(dataDir, 'hermes'),
  options: {
    /** More environment for the host service (the demo points it at its Hermes stand-in). */
    hostEnv?: Record<string, string>;
  } = {},
): Promise<Suite> {
  await assertPortsFree(ports);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const voiceApiKey = localSecret(dataDir, 'voice-api-key');
  const capturePath = path.join(dataDir, CAPTURE_FILE);
  const started: Launched[] = [];
  try {
    const relay = await launch({
      name: 'relay',
      entry: 'server-relay/src/main.ts',
      port: ports.relay,
      env: {
        HOST: '127.0.0.1',
        PORT: String(ports.relay),
        DATA_PATH: path.join(dataDir, 'relay.sqlite'),
        // No Apple account locally: pushes are accepted and written to a capture file instead.
        PUBLIC_URL: 'https://localhost',
        APNS_TOPIC: SUITE_APNS_TOPIC,
        APNS_MODE: 'accept',
        APNS_CAPTURE_PATH: capturePath,
      },
      readyPath: '/healthz',
    });
    started.push(relay);
    const host = await launch({
      name: 'host',
      entry: 'server-dashboard/src/main.ts',
      port: ports.host,
      env: {
        CONDUIT_HOST_BIND: '127.0.0.1',
        CONDUIT_HOST_PORT: String(ports.host),
        HERMES_HOME: hermesHome,
        ...options.hostEnv,
      },
      readyPath: '/api/plugins/conduit_push/capabilities',
    });
    started.push(host);
    const voice = await launch({
      name: 'voice',
      entry: 'server-voice/src/main.ts',
      port: ports.voice,
      env: {
        HERMES_REALTIME_HOST: '127.0.0.1',
        HERMES_REALTIME_PORT: String(ports.voice),
        HERMES_REALTIME_API_KEY: voiceApiKey,
      },
      readyPath: '/v1/realtime/discovery',
    });
    started.push(voice);
    let stopping = false;
    const unexpectedExit = new Promise<{ server: Launched; code: number | null }>((resolve) => {
      for (const server of started) {
        void server.exited.then((code) => {
          if (!stopping) resolve({ server, code });
        });
      }
    });
    return {
      dataDir,
      hermesHome,
      capturePath,
      relay,
      host,
      voice,
      voiceApiKey,
      unexpectedExit,
      stop: async () => {
        stopping = true;
        await Promise.all(started.map((server) => server.stop()));
      },
    };
  } catch (error) {
    await Promise.all(started.map((server) => server.stop()));
    throw error;
  }
}
