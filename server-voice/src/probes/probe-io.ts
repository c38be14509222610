/** Where a probe's command-line entry writes: the report to `out`, refusals and diagnostics to `err`. */
export interface ProbeIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** The terminal (the scripts under `scripts/`). */
export const consoleIo: ProbeIo = {
  out: (text) => console.log(text),
  err: (text) => console.error(text),
};

/** Keeps what a probe wrote (tests assert the report and the messages). */
export function memoryIo(): ProbeIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (text) => stdout.push(text), err: (text) => stderr.push(text) };
}

/** Exit code of a run the probe refused (bad arguments, an unusable fixture, a missing setting). */
export const EXIT_REFUSED = 2;
/** Exit code of a run whose measurement failed or was invalid. */
export const EXIT_FAILED = 1;
