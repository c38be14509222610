/**
 * `npm run demo`: starts the suite with a simulated phone and a Hermes stand-in (state in
 * `<data dir>/demo`, emptied at each run), prints the transcript, then keeps the servers running for the
 * voice demo page until Ctrl-C. `npm run demo -- --exit` stops once the transcript is printed.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { runDemo, startDemoSuite, type DemoSuite } from './demo.js';
import { REPO_ROOT } from './launch.js';
import { portsFromEnv, startFailureMessage } from './ports.js';
import { assertPortsFree, DEFAULT_PORTS, type SuitePorts } from './suite.js';

const exitWhenDone = process.argv.includes('--exit');
const dataDir = path.resolve(process.env.CONDUIT_DATA_DIR ?? path.join(REPO_ROOT, 'data'));
const demoDir = path.join(dataDir, 'demo');
/** The likeliest holder of the demo's ports. */
const PORT_HINT = ' (a suite started with `npm start` uses the same ports)';

let ports: SuitePorts;
try {
  ports = portsFromEnv();
} catch (error) {
  console.error(startFailureMessage(error, DEFAULT_PORTS, 'the demo'));
  process.exit(1);
}
let started: DemoSuite;
try {
  // Checked before the demo folder is emptied, so a demo still running keeps its state.
  await assertPortsFree(ports);
  // Each run starts from nothing: a new phone, a new pairing, an empty capture file.
  rmSync(demoDir, { recursive: true, force: true });
  started = await startDemoSuite(demoDir, ports);
} catch (error) {
  console.error(startFailureMessage(error, ports, 'the demo', PORT_HINT));
  process.exit(1);
}
const demo = started;

void demo.suite.unexpectedExit.then(async ({ server, code }) => {
  console.error(`The ${server.name} stopped unexpectedly (exit code ${code ?? 'signal'}); stopping the demo.`);
  console.error(server.output().split('\n').slice(-20).join('\n'));
  await demo.stop();
  process.exit(1);
});

try {
  await runDemo(demo, (line) => console.log(line));
} catch (error) {
  console.error(`\nThe demo stopped: ${error instanceof Error ? error.message : String(error)}`);
  // The servers log ids and counts only, never content or credentials.
  console.error(`Last lines of the host service:\n${demo.suite.host.output().split('\n').slice(-20).join('\n')}`);
  await demo.stop();
  process.exit(1);
}

if (exitWhenDone) {
  await demo.stop();
  process.exit(0);
}
console.log('\nThe servers keep running for the voice demo. Press Ctrl-C to stop.');
const stop = () => {
  void demo.stop().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
