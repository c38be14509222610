/** Structured, line-per-event JSON logs. Fields carry ids, counts and timings; never audio or credentials. */
export type Log = (event: string, fields?: Record<string, unknown>) => void;

export interface Logger {
  info: Log;
  warn: Log;
  /** Text fields (transcripts, replies) — written only with the debug switch on. */
  debugText: (event: string, fields: Record<string, unknown>) => void;
}

export function createLogger(options: { debug: boolean; write?: (line: string) => void; now?: () => Date }): Logger {
  const write = options.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const now = options.now ?? (() => new Date());
  const emit =
    (level: string) =>
    (event: string, fields: Record<string, unknown> = {}) =>
      write(JSON.stringify({ time: now().toISOString(), level, event, ...fields }));
  return {
    info: emit('info'),
    warn: emit('warn'),
    debugText: (event, fields) => {
      if (options.debug) emit('debug')(event, fields);
    },
  };
}

/** A logger that keeps lines in memory (tests assert what is and is not logged). */
export function memoryLogger(debug = false): Logger & { lines: string[] } {
  const lines: string[] = [];
  return { ...createLogger({ debug, write: (line) => lines.push(line) }), lines };
}
