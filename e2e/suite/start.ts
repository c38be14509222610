/** `npm start`: runs the whole suite in the foreground until Ctrl-C. */
import path from 'node:path';
import { PortInUseError, REPO_ROOT } from './launch.js';
import { DEFAULT_PORTS, startSuite, type SuitePorts } from './suite.js';

/** `SUITE_RELAY_PORT`, `SUITE_HOST_PORT`, `SUITE_VOICE_PORT` move a server off its default port. */
const PORT_VARIABLES: Record<keyof SuitePorts, string> = {
  relay: 'SUITE_RELAY_PORT',
  host: 'SUITE_HOST_PORT',
  voice: 'SUITE_VOICE_PORT',
};

function portsFromEnv(): SuitePorts {
  const ports = { ...DEFAULT_PORTS };
  for (const [server, name] of Object.entries(PORT_VARIABLES) as [keyof SuitePorts, string][]) {
    const raw = process.env[name]?.trim();
    if (!raw) continue;
    const port = Number(raw);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      console.error(`${name} must be a port number from 1 to 65535`);
      process.exit(1);
    }
    ports[server] = port;
  }
  return ports;
}

const dataDir = path.resolve(process.env.CONDUIT_DATA_DIR ?? path.join(REPO_ROOT, 'data'));
const ports = portsFromEnv();
let suite;
try {
  suite = await startSuite(dataDir, ports, process.env.HERMES_HOME || undefined);
} catch (error) {
  if (error instanceof PortInUseError) {
    const server = (Object.keys(ports) as (keyof SuitePorts)[]).find((name) => ports[name] === error.port);
    console.error(
      `${error.message} Stop that program, or start the suite with ${server ? PORT_VARIABLES[server] : 'another port'}=<free port>.`,
    );
  } else {
    console.error(error instanceof Error ? error.message : String(error));
  }
  process.exit(1);
}
const running = suite;
console.log(`Conduit suite is running (state in ${dataDir}):
  relay          ${running.relay.url}          (GET /healthz)
  host service   ${running.host.url}          (GET /api/plugins/conduit_push/capabilities)
  voice gateway  ${running.voice.url}          (GET /v1/realtime/discovery, bearer key in ${path.join(dataDir, 'voice-api-key')})
Press Ctrl-C to stop.`);
// One server ending on its own ends the suite: say which, show its last words, stop the others.
void running.unexpectedExit.then(async ({ server, code }) => {
  console.error(`The ${server.name} stopped unexpectedly (exit code ${code ?? 'signal'}); stopping the suite.`);
  console.error(server.output().split('\n').slice(-20).join('\n'));
  await running.stop();
  process.exit(1);
});
const stop = () => {
  void running.stop().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
