import { run } from './serve-command.js';

process.exit(await run(process.argv.slice(2)));
