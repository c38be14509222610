/**
 * Tells a cron run from an interactive turn. Hermes names a cron run's task `cron:<job id>:…` and,
 * on older versions, its session `cron_<job id>_<YYYYMMDD>_<HHMMSS>`; either identifies the job.
 */
const TASK = /^cron:([^:\s]+):/;
const SESSION = /^cron_(.+)_(\d{8})_(\d{6})$/;

export function cronJobId(taskId: string | undefined, sessionId: string | undefined): string | null {
  const fromTask = taskId ? TASK.exec(taskId) : null;
  if (fromTask?.[1]) return fromTask[1];
  const fromSession = sessionId ? SESSION.exec(sessionId) : null;
  return fromSession?.[1] ?? null;
}
