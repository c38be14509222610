/**
 * The suite's ports as the command line sets them, and the message a taken port gets. Shared by the
 * one-command start (start.ts) and the demo (run-demo.ts), which run the same servers on the same ports.
 */
import { PortInUseError } from './launch.js';
import { DEFAULT_PORTS, type SuitePorts } from './suite.js';

/** `SUITE_RELAY_PORT`, `SUITE_HOST_PORT`, `SUITE_VOICE_PORT` move a server off its default port. */
export const PORT_VARIABLES: Record<keyof SuitePorts, string> = {
  relay: 'SUITE_RELAY_PORT',
  host: 'SUITE_HOST_PORT',
  voice: 'SUITE_VOICE_PORT',
};

export class PortVariableError extends Error {
  constructor(readonly variable: string) {
    super(`${variable} must be a port number from 1 to 65535`);
    this.name = 'PortVariableError';
  }
}

/** The default ports, each moved by its variable when set; throws PortVariableError naming a bad one. */
export function portsFromEnv(env: NodeJS.ProcessEnv = process.env): SuitePorts {
  const ports = { ...DEFAULT_PORTS };
  for (const [server, name] of Object.entries(PORT_VARIABLES) as [keyof SuitePorts, string][]) {
    const raw = env[name]?.trim();
    if (!raw) continue;
    const port = Number(raw);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new PortVariableError(name);
    ports[server] = port;
  }
  return ports;
}

/**
 * What to tell the user when starting failed: for a taken port, which one, what holds it may be, and
 * the variable that moves that server elsewhere. `command` names what they ran ("the suite", "the demo").
 */
export function startFailureMessage(error: unknown, ports: SuitePorts, command: string, hint = ''): string {
  if (error instanceof PortInUseError) {
    const server = (Object.keys(ports) as (keyof SuitePorts)[]).find((name) => ports[name] === error.port);
    const variable = server ? PORT_VARIABLES[server] : 'another port';
    return `${error.message} Stop that program${hint}, or start ${command} with ${variable}=<free port>.`;
  }
  return error instanceof Error ? error.message : String(error);
}
