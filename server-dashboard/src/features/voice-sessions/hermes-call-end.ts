import { spawn } from 'node:child_process';
import { childEnvironment } from '../../kernel/hermes-python.js';
import { configSection, readProfileFiles } from '../../kernel/profile-files.js';
import type { CallEnd, CallEndStep, CallEndTurn } from './call-ends.js';

/**
 * The three steps of a saved call's end (call-ends.ts), run by Hermes' own code on Hermes' own Python
 * (kernel/hermes-python.ts), one short-lived process per step so a step that hangs is killed on its own
 * when the queue stops waiting:
 * 1. `on_session_end` through Hermes' lifecycle dispatch (`hermes_cli.lifecycle.invoke_hook`, or
 *    `hermes_cli.plugins.invoke_hook` on a Hermes without it) after plugin discovery, with
 *    `session_id, completed: true, interrupted: false, model: <engine>, platform: "desktop",
 *    reason: "voice_call_ended"`;
 * 2. memory: the provider `memory.provider` names, loaded with `plugins.memory.load_memory_provider`
 *    and driven through Hermes' `agent.memory_manager.MemoryManager` — `add_provider`, `initialize_all`
 *    for the session (with its title), `sync_all` per user→assistant exchange (a turn missing either side
 *    is not synced), `flush_pending(30)`, `on_session_end(messages)`, `shutdown_all`;
 * 3. `on_session_finalize` through Hermes' `hermes_cli.lifecycle.finalize_session`.
 * A call kept with a chat runs only the memory step (under the chat's session; the chat goes on).
 */

const STEP_SOURCE = String.raw`
import json, os, sys
request = json.loads(sys.stdin.read())
home, step, session_id = request["home"], request["step"], request["session_id"]
env_file = os.path.join(home, ".env")
if os.path.exists(env_file):
    try:
        from dotenv import load_dotenv
        load_dotenv(env_file, override=True)
    except ImportError:
        pass

def done(outcome):
    sys.stdout.write(json.dumps({"outcome": outcome}) + "\n")
    sys.stdout.flush()
    sys.exit(0)

if step in ("on_session_end", "on_session_finalize"):
    from hermes_cli import plugins
    try:
        plugins.discover_plugins()
    except Exception as error:
        sys.stderr.write("conduit call end: plugin discovery failed: %r\n" % (error,))
    try:
        from hermes_cli import lifecycle
    except ImportError:
        lifecycle = None
    if step == "on_session_end":
        invoke = getattr(lifecycle, "invoke_hook", None) or plugins.invoke_hook
        invoke("on_session_end", session_id=session_id, completed=True, interrupted=False,
               model=request["engine"], platform="desktop", reason="voice_call_ended")
    else:
        finalize = getattr(lifecycle, "finalize_session", None)
        kwargs = {"session_id": session_id, "platform": "desktop", "reason": "voice_call_ended"}
        if finalize is not None:
            finalize(**kwargs)
        else:
            plugins.invoke_hook("on_session_finalize", **kwargs)
    done("ran")

name = request.get("provider")
if not name:
    done("no_provider")
from plugins.memory import load_memory_provider
provider = load_memory_provider(name)
if provider is None or not provider.is_available():
    done("unavailable")
from agent.memory_manager import MemoryManager
manager = MemoryManager()
manager.add_provider(provider)
init = {"session_id": session_id, "platform": "desktop", "hermes_home": home, "agent_context": "primary",
        "agent_identity": request["profile"], "agent_workspace": "hermes"}
if request.get("title"):
    init["session_title"] = request["title"]
manager.initialize_all(**init)
try:
    turns = request["turns"]
    for index in range(len(turns) - 1):
        if turns[index]["role"] == "user" and turns[index + 1]["role"] == "assistant":
            manager.sync_all(turns[index]["text"], turns[index + 1]["text"], session_id=session_id)
    if hasattr(manager, "flush_pending"):
        manager.flush_pending(30)
    manager.on_session_end([{"role": turn["role"], "content": turn["text"]} for turn in turns])
finally:
    manager.shutdown_all()
done("ran")
`;

/** How a step finished, as its process reported it. */
export type HermesStepOutcome = 'ran' | 'no_provider' | 'unavailable';

class StepFailed extends Error {
  constructor(step: string, why: string) {
    super(`${step}: ${why}`);
    this.name = 'StepFailed';
  }
}

/** The most a step's process may print; its one answer line is short. */
const MAX_OUTPUT_BYTES = 64 * 1024;

function runStep(
  python: string,
  call: CallEnd,
  step: string,
  extra: Record<string, unknown>,
  signal: AbortSignal,
): Promise<HermesStepOutcome> {
  const request = {
    home: call.home,
    profile: call.profile,
    step,
    session_id: call.sessionId,
    engine: call.engine,
    title: call.title,
    turns: call.turns satisfies CallEndTurn[],
    ...extra,
  };
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new StepFailed(step, 'aborted'));
      return;
    }
    const child = spawn(python, ['-c', STEP_SOURCE], {
      cwd: call.home,
      env: childEnvironment(call.home),
      // Hermes' and the provider's own log lines stay out of this service's log.
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let output = '';
    const onAbort = () => child.kill('SIGKILL');
    signal.addEventListener('abort', onAbort, { once: true });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      if (output.length < MAX_OUTPUT_BYTES) output += chunk;
    });
    child.on('error', () => reject(new StepFailed(step, 'spawn_failed')));
    child.on('close', (code) => {
      signal.removeEventListener('abort', onAbort);
      const line = output
        .split('\n')
        .reverse()
        .find((text) => text.startsWith('{"outcome"'));
      let outcome: unknown;
      try {
        outcome = line ? (JSON.parse(line) as { outcome?: unknown }).outcome : undefined;
      } catch {
        outcome = undefined;
      }
      if (code === 0 && (outcome === 'ran' || outcome === 'no_provider' || outcome === 'unavailable')) {
        resolve(outcome);
      } else {
        reject(new StepFailed(step, signal.aborted ? 'aborted' : `exit ${code ?? 'signal'}`));
      }
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(JSON.stringify(request));
  });
}

/**
 * Hermes' three call-end steps on `python` (Hermes' interpreter). `onStep` is told each step's outcome
 * (the log and tests read it).
 */
export function hermesCallEndSteps(
  python: string,
  serviceEnv: Readonly<Record<string, string | undefined>>,
  onStep?: (call: CallEnd, step: string, outcome: HermesStepOutcome) => void,
): CallEndStep[] {
  const step = (name: string, forChatCalls: boolean, extra: (call: CallEnd) => Promise<Record<string, unknown>>) => ({
    name,
    forChatCalls,
    async run(call: CallEnd, signal: AbortSignal) {
      const outcome = await runStep(python, call, name, await extra(call), signal);
      onStep?.(call, name, outcome);
    },
  });
  return [
    step('on_session_end', false, async () => ({})),
    step('memory', true, async (call) => {
      const files = await readProfileFiles({ name: call.profile, home: call.home }, serviceEnv);
      const raw = configSection(files.config, 'memory').provider;
      const provider = typeof raw === 'string' && raw.trim() && raw.trim() !== 'builtin' ? raw.trim() : null;
      return { provider };
    }),
    step('on_session_finalize', false, async () => ({})),
  ];
}
