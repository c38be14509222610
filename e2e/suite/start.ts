/** `npm start`: runs the whole suite in the foreground until Ctrl-C. */
import path from 'node:path';
import { REPO_ROOT } from './launch.js';
import { portsFromEnv, startFailureMessage } from './ports.js';
import { DEFAULT_PORTS, startSuite, type SuitePorts } from './suite.js';

const dataDir = path.resolve(process.env.CONDUIT_DATA_DIR ?? path.join(REPO_ROOT, 'data'));
let ports: SuitePorts;
try {
  ports = portsFromEnv();
} catch (error) {
  console.error(startFailureMessage(error, DEFAULT_PORTS, 'the suite'));
  process.exit(1);
}
let suite;
try {
  suite = await startSuite(dataDir, ports, process.env.HERMES_HOME || undefined);
} catch (error) {
  console.error(startFailureMessage(error, ports, 'the suite'));
  process.exit(1);
}
const running = suite;
console.log(`Conduit suite is running (state in ${dataDir}):
  relay          ${running.relay.url}          (GET /healthz)
  host service   ${running.host.url}          (GET /api/plugins/conduit_push/capabilities)
  voice gateway  ${running.voice.url}          (GET /v1/realtime/discovery, bearer key in ${path.join(dataDir, 'voice-api-key')})
  voice demo     ${running.voice.url}/demo     (open it in a browser and paste that key)
Press Ctrl-C to stop.
To see it work end to end, stop it and run \`npm run demo\`: the same servers on the same ports, with
a simulated phone and a Hermes stand-in paired through them (state in ${path.join(dataDir, 'demo')}).`);
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
