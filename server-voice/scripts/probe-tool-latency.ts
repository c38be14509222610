/**
 * `npm run probe:tool-latency -- --case dependent|parallel|mixed|timeout|cancel [--input text|voice]
 * [--gateway URL --key K]`: client function tools through the gateway, timed from `text_submitted` or
 * `speech_end` (src/probes/tool-latency.ts). Without --gateway it starts a local gateway and fake model.
 */
import { consoleIo } from '../src/probes/probe-io.js';
import { toolProbeCli } from '../src/probes/tool-latency.js';

process.exitCode = await toolProbeCli(process.argv.slice(2), consoleIo);
process.exit();
