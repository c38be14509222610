/**
 * The first run that shows the system working (`npm run demo`). The suite's real relay, host service
 * and voice gateway, with a simulated phone and a Hermes stand-in paired through them: the phone
 * registers on the relay, the host claims its pairing code, the phone turns on end-to-end encryption;
 * then Hermes finishes a turn, asks for an approval the phone answers, and asks a clarify question the
 * phone answers while the host holds the hook. The transcript shows each step from both sides: what
 * Hermes did, what the relay pushed (sealed), what the phone showed once decrypted, what it answered,
 * and what came back to Hermes. No credential, token or key is ever printed.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { HookPayload } from '@conduit/server-dashboard/bridge/hook-payload';
import { HermesStandIn, type ApprovalCall, type HookOutcome } from './hermes-stand-in.js';
import { SimulatedPhone, type PhoneNotification } from './simulated-phone.js';
import { assertPortsFree, startSuite, SUITE_APNS_TOPIC, type Suite, type SuitePorts } from './suite.js';
import { waitFor, within } from './wait.js';

/**
 * The longest any one step may take. The host polls a parked card 2 s after parking it and a hook
 * command starts in well under a second; a minute leaves room for a loaded machine.
 */
const STEP_TIMEOUT_MS = 60_000;

/** What the stand-in's Hermes is asked, and what it answers. */
const STORY = {
  backups: {
    title: 'Backups',
    question: "How did last night's backups go?",
    reply: 'All **3** backups finished overnight; the newest is 42 GB.',
  },
  release: {
    title: 'Release prep',
    question: 'Clean the build folder, then ship the release',
    command: 'rm -rf build',
    description: 'Delete the build folder (rm -rf build)',
    clarify: { question: 'Which release should ship?', choices: ['v1.4 (recommended)', 'v1.5-beta'] },
    answer: 'v1.4 (recommended)',
    reply: 'The build folder is gone and **v1.4** is on its way. Release notes: [CHANGELOG](https://example.com/v1.4).',
  },
};

export interface DemoSuite {
  suite: Suite;
  hermes: HermesStandIn;
  stop(): Promise<void>;
}

export interface DemoResult {
  phone: SimulatedPhone;
  /** Every push the phone received, in order. */
  notifications: PhoneNotification[];
  /** The approval call the Hermes API server stand-in received. */
  approval: ApprovalCall;
  /** What the held clarify hook printed for Hermes. */
  clarifyAnswer: unknown;
}

/**
 * The suite for the demo: the Hermes stand-in first (the host service must know its API server), then
 * relay, host and voice gateway with their state under `dataDir`, the Hermes home at `dataDir/hermes`.
 */
export async function startDemoSuite(dataDir: string, ports: SuitePorts): Promise<DemoSuite> {
  const hermesHome = path.join(dataDir, 'hermes');
  const hostStateDir = path.join(hermesHome, 'conduit-host');
  await assertPortsFree(ports); // before the stand-in writes anything
  const hermes = await HermesStandIn.start(hermesHome, hostStateDir);
  let suite: Suite;
  try {
    suite = await startSuite(dataDir, ports, hermesHome, {
      hostEnv: {
        ...hermes.hostEnv(),
        CONDUIT_STATE_DIR: hostStateDir,
        // Standalone with the token the service creates in its state folder, whatever the caller's
        // environment says: the phone signs in with that token.
        CONDUIT_HOST_TOKEN: '',
        HERMES_DASHBOARD_URL: '',
      },
    });
  } catch (error) {
    await hermes.close();
    throw error;
  }
  return {
    suite,
    hermes,
    stop: async () => {
      await suite.stop();
      await hermes.close();
    },
  };
}

/** A Hermes session id (`YYYYMMDD_HHMMSS_<6 hex>`). */
function newSessionId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '_').slice(0, 15);
  return `${stamp}_${randomBytes(3).toString('hex')}`;
}

/** A path as the user would type it: relative to the working folder when inside it. */
function displayPath(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' / ');
}

/** Plays the demo on a started demo suite, printing the transcript line by line. */
export async function runDemo(demo: DemoSuite, print: (line: string) => void): Promise<DemoResult> {
  const { suite, hermes } = demo;
  const say = (who: string, text: string) => print(`  ${who.padEnd(6)} ${text}`);
  const more = (text: string) => print(`         ${text}`);
  const notifications: PhoneNotification[] = [];

  /** One hook event from the stand-in's Hermes, through the hook command Hermes runs. */
  const hook = async (payload: HookPayload): Promise<HookOutcome> => {
    const outcome = await hermes.hook(payload);
    if (outcome.code !== 0) throw new Error(`The ${payload.hook_event_name} hook command exited with ${outcome.code}.`);
    return outcome;
  };
  const event = (name: string, sessionId: string, extra: Record<string, unknown>): HookPayload => ({
    hook_event_name: name,
    tool_name: null,
    tool_input: null,
    session_id: sessionId,
    cwd: hermes.home,
    profile: 'default',
    extra,
  });

  print('Conduit demo: a simulated phone and a Hermes stand-in, paired through the real relay and host service');
  print(`  relay ${suite.relay.url} · host service ${suite.host.url} · voice gateway ${suite.voice.url}`);
  print(
    `  state in ${displayPath(suite.dataDir)}; APNs pushes go to ${displayPath(suite.capturePath)}, never to Apple`,
  );
  print('');

  print('Pairing');
  const runtimeFile = path.join(hermes.hostStateDir, 'runtime.json');
  await waitFor('the host service to publish its hook endpoint', () => existsSync(runtimeFile) || undefined, {
    timeoutMs: STEP_TIMEOUT_MS,
  });
  const hostToken = readFileSync(path.join(hermes.hostStateDir, 'host-token'), 'utf8').trim();
  const phone = await SimulatedPhone.register(suite.relay.url, suite.capturePath, SUITE_APNS_TOPIC);
  say('phone', 'registered with the relay (POST /v1/installations), previews on');
  const pairing = await phone.pairHost(suite.host.url, hostToken);
  say(
    'phone',
    'minted a pairing code on the relay and gave it to the host service (POST /api/plugins/conduit_push/pair)',
  );
  say('host', `claimed the code on the relay: paired as "${pairing.gatewayName}"`);
  await phone.enableEncryption(suite.host.url, hostToken);
  say('phone', 'turned on end-to-end encryption (POST /api/plugins/conduit_push/e2e): a key only the phone and');
  more('the host hold; from now on the relay and APNs carry ciphertext');
  print('');

  /** Waits for the phone's next push of this type and prints what the relay pushed and the phone shows. */
  const receive = async (type: string): Promise<PhoneNotification> => {
    const notification = await phone.nextNotification(type, STEP_TIMEOUT_MS);
    notifications.push(notification);
    const banner = `"${oneLine(`${notification.banner.title}: ${notification.banner.body}`)}"`;
    if (notification.sealed) {
      say('relay', `pushed ${type}, sealed (${notification.ciphertextBytes} bytes of ciphertext)`);
      more(`until the phone opens it, the lock screen shows ${banner}`);
    } else {
      say('relay', `pushed ${type} in clear: ${banner}`);
    }
    const shown = notification.shown;
    if (!shown) throw new Error(`The phone could not open the ${type} push.`);
    say('phone', `shows  ${shown.title}`);
    more(`       ${oneLine(shown.body)}`);
    if (shown.card?.choices.length) more(`       [ ${shown.card.choices.join(' | ')} ]`);
    return notification;
  };
  print('1. A finished turn');
  const backups = newSessionId();
  hermes.addSession(backups, STORY.backups.title, 'api_server');
  const backupsTurn = { turn_id: 'turn-1', task_id: 'task-1', platform: 'api_server', model: 'hermes-4' };
  await hook(event('pre_llm_call', backups, { ...backupsTurn, user_message: STORY.backups.question }));
  say('hermes', `the user asks "${STORY.backups.question}" (chat "${STORY.backups.title}")`);
  await hook(
    event('post_llm_call', backups, {
      ...backupsTurn,
      user_message: STORY.backups.question,
      assistant_response: STORY.backups.reply,
    }),
  );
  await hook(event('on_session_end', backups, { ...backupsTurn, completed: true, failed: false, interrupted: false }));
  say('hermes', `replied "${STORY.backups.reply}" and ended the turn`);
  more('(hooks pre_llm_call, post_llm_call, on_session_end, each through bin/conduit-hook.mjs)');
  await receive('response.ready');
  print('');

  print('2. An approval card, answered on the phone');
  const release = newSessionId();
  hermes.addSession(release, STORY.release.title, 'api_server');
  const runId = `run_${randomBytes(12).toString('hex')}`;
  const sessionKey = `agent:main:api_server:${release}`;
  const releaseTurn = { turn_id: 'turn-2', task_id: 'task-2', platform: 'api_server', model: 'hermes-4' };
  await hook(event('pre_llm_call', release, { ...releaseTurn, user_message: STORY.release.question }));
  say('hermes', `the user asks "${STORY.release.question}" (chat "${STORY.release.title}")`);
  const approvalReached = hermes.awaitApproval(runId);
  const approvalRequest = {
    command: STORY.release.command,
    description: STORY.release.description,
    pattern_key: 'rm_rf',
    pattern_keys: ['rm_rf'],
    session_key: sessionKey,
    surface: 'api_server',
    turn_id: releaseTurn.turn_id,
    tool_call_id: 'call-1',
    run_id: runId,
  };
  await hook(event('pre_approval_request', release, approvalRequest));
  say('hermes', `API server run ${runId} wants to run "${STORY.release.command}" and waits for approval`);
  more('(hook pre_approval_request)');
  const approvalCard = await receive('approval.needed');
  const approvalId = approvalCard.shown?.card?.requestId;
  if (!approvalId) throw new Error('The approval card names no decision on the relay, so the phone cannot answer it.');
  const approvalStatus = await phone.answer(approvalId, 'once');
  say('phone', `tapped "once": sealed for the host, POST /v1/decisions/${approvalId}/respond → ${approvalStatus}`);
  const approval = await within('the approval to reach Hermes', approvalReached, STEP_TIMEOUT_MS);
  say('host', 'polled the decision, opened the answer and passed it to the run that waits');
  say('hermes', `API server received POST /v1/runs/${approval.runId}/approval ${JSON.stringify(approval.body)}`);
  await hook(event('post_approval_response', release, { ...approvalRequest, choice: 'once' }));
  more('the run goes on (hook post_approval_response)');
  print('');

  print('3. A clarify question, answered on the phone');
  const clarifyCall = {
    hook_event_name: 'pre_tool_call',
    tool_name: 'clarify',
    tool_input: STORY.release.clarify,
    session_id: release,
    cwd: hermes.home,
    profile: 'default',
    extra: { ...releaseTurn, tool_call_id: 'call-2', api_request_id: 'req-2' },
  };
  const held = hook(clarifyCall);
  held.catch(() => undefined); // awaited below; a failure before then must not go unhandled
  say('hermes', `calls its clarify tool: "${STORY.release.clarify.question}"`);
  more('(hook pre_tool_call; the host parks the question on the relay and holds the hook)');
  const question = await receive('input.needed');
  const questionId = question.shown?.card?.requestId;
  if (!questionId) throw new Error('The clarify card names no decision on the relay, so the phone cannot answer it.');
  const clarifyStatus = await phone.answer(questionId, STORY.release.answer);
  say('phone', `tapped "${STORY.release.answer}": sealed, POST /v1/decisions/${questionId}/respond → ${clarifyStatus}`);
  const clarified = await within('the clarify answer to reach Hermes', held, STEP_TIMEOUT_MS);
  const block = clarified.answer as { action?: unknown; message?: unknown } | null;
  if (block?.action !== 'block' || typeof block.message !== 'string') {
    throw new Error('The held clarify hook gave Hermes no answer, so Hermes would ask in its own prompt.');
  }
  say('hermes', 'the held hook returned {"action":"block", …}: Hermes skips its own prompt and the model reads');
  more(block.message);
  print('');

  print('4. The turn finishes');
  await hook(
    event('post_llm_call', release, {
      ...releaseTurn,
      user_message: STORY.release.question,
      assistant_response: STORY.release.reply,
    }),
  );
  await hook(event('on_session_end', release, { ...releaseTurn, completed: true, failed: false, interrupted: false }));
  say('hermes', `replied "${STORY.release.reply}"`);
  await receive('response.ready');
  print('');

  const sealedInFull = notifications.filter(
    (n) => n.sealed && n.shown !== null && !n.captured.includes(n.shown.body) && !n.captured.includes(n.shown.title),
  ).length;
  print(
    sealedInFull === notifications.length
      ? `All ${notifications.length} pushes were sealed end to end: the relay and APNs never saw a title, a text or an answer.`
      : `${sealedInFull} of ${notifications.length} pushes were sealed end to end.`,
  );
  print('');
  print(`Voice: open ${suite.voice.url}/demo in a browser and paste the key stored in`);
  print(
    `  ${displayPath(path.join(suite.dataDir, 'voice-api-key'))} (the echo agent answers until a Hermes backend is configured,`,
  );
  print('  see server-voice/README.md).');
  return { phone, notifications, approval, clarifyAnswer: clarified.answer };
}
