#!/usr/bin/env node
/**
 * The `conduit` command. Each subcommand lives in its own module, loaded only when used so a hook
 * invocation (run by Hermes on every event) starts as little as possible.
 */
interface CommandModule {
  run(argv: string[]): Promise<number>;
}

const commands: Record<string, { module: string; summary: string }> = {
  hook: { module: '../bridge/hook-command.js', summary: 'forward a Hermes shell-hook event (JSON on stdin)' },
  'setup-hermes': { module: '../bridge/setup-hermes.js', summary: 'write or remove the Hermes hooks and MCP entries' },
  push: { module: '../pairing/cli.js', summary: 'pair, status, test, redact on|off, unpair' },
  serve: { module: '../serve-command.js', summary: 'run the host service in the foreground' },
};

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(14)}${c.summary}`);
  return `usage: conduit <command> [args]\n\n${lines.join('\n')}\n`;
}

function isCommandModule(value: unknown): value is CommandModule {
  return typeof value === 'object' && value !== null && 'run' in value && typeof value.run === 'function';
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const command = name ? commands[name] : undefined;
  if (!command) {
    process.stderr.write(usage());
    // Asked for help: success. No command or an unknown one: a usage error, as `conduit push` does.
    return name === '--help' || name === '-h' ? 0 : 2;
  }
  const loaded: unknown = await import(new URL(command.module, import.meta.url).href);
  if (!isCommandModule(loaded)) throw new Error(`conduit ${name} is not available in this build`);
  return loaded.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`conduit: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
