/** `npm start`: runs the whole suite in the foreground until Ctrl-C. */
import path from 'node:path';
import { REPO_ROOT } from './launch.js';
import { startSuite } from './suite.js';

const dataDir = path.resolve(process.env.CONDUIT_DATA_DIR ?? path.join(REPO_ROOT, 'data'));
const suite = await startSuite(dataDir, undefined, process.env.HERMES_HOME || undefined);
console.log(`Conduit suite is running (state in ${dataDir}):
  relay          ${suite.relay.url}          (GET /healthz)
  host service   ${suite.host.url}          (GET /api/plugins/conduit_push/capabilities)
  voice gateway  ${suite.voice.url}          (GET /v1/realtime/discovery, bearer key in ${path.join(dataDir, 'voice-api-key')})
Press Ctrl-C to stop.`);
const stop = () => {
  void suite.stop().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
