/**
 * `HERMES_TTS_CANARY_CONFIG=/path/to/profile/config.yaml npm run canary:tts`: the profile's configured TTS
 * through the gateway's streaming speech path and local RTP peers (src/probes/tts-canary.ts). Prints timings,
 * never credentials; refuses with exit 2 when the variable is not set.
 */
import { consoleIo } from '../src/probes/probe-io.js';
import { ttsCanaryCli } from '../src/probes/tts-canary.js';

process.exitCode = await ttsCanaryCli(process.env, consoleIo);
process.exit();
