/**
 * `npm run probe:voice`: end-to-end latency of spoken turns (src/probes/voice-latency.ts). A werift client speaks
 * a synthetic question (espeak-ng, offline) through a gateway and prints JSON timings from the last voiced frame.
 *
 *   npm run probe:voice                              # starts its own gateway with local fake STT/agent/TTS servers
 *   npm run probe:voice -- --case first_sentence --turns 4 --reasoning low
 *   npm run probe:voice -- --gateway URL --key K     # probes a running gateway (its own providers)
 */
import { consoleIo } from '../src/probes/probe-io.js';
import { voiceProbeCli } from '../src/probes/voice-latency.js';

process.exitCode = await voiceProbeCli(process.argv.slice(2), consoleIo);
// werift and the fake servers keep handles open; the report is written.
process.exit();
