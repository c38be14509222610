/** Everything the relay reads from its environment, validated once at boot. */
export interface RelayConfig {
  host: string;
  port: number;
}

export class ConfigError extends Error {}

/** Reads the operator's environment (see the README's configuration table). Throws ConfigError with a message naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv): RelayConfig {
  const port = env.PORT?.trim() ? Number(env.PORT) : 9120;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError('PORT must be a port number.');
  return { host: env.HOST?.trim() || '127.0.0.1', port };
}
