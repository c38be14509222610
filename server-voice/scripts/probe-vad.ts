/**
 * `npm run probe:vad -- --speech-fixture FILE.wav [--model silero.onnx] [--backend rms|silero] [--silence 0.7]`:
 * the offline noise-step and quiet-speech check of the direct capture path (src/probes/vad-probe.ts). Prints
 * JSON; a fixture it cannot use is a message on stderr and exit code 2.
 */
import { consoleIo } from '../src/probes/probe-io.js';
import { vadProbeCli } from '../src/probes/vad-probe.js';

process.exitCode = await vadProbeCli(process.argv.slice(2), consoleIo);
