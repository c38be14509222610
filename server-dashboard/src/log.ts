/**
 * One JSON line per log record. Callers pass identifiers and counts, never content: hook payloads,
 * replies and credentials stay out of the log by construction (no field takes a whole payload).
 */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export function jsonLogger(write: (line: string) => void = (line) => process.stderr.write(line + '\n')): Logger {
  const emit = (level: string, msg: string, fields?: LogFields) =>
    write(JSON.stringify({ level, time: new Date().toISOString(), msg, ...fields }));
  return {
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
  };
}

export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };

/** A logger that keeps records in memory, for tests asserting what was (and was not) logged. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, ...jsonLogger((line) => lines.push(line)) };
}
