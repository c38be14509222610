import { z } from 'zod';
import {
  CONDUIT_SETTINGS_LIMITS,
  type ConduitSettingValue,
  type ConduitSettingsMode,
  type ConduitSharedSetting,
} from '@conduit/contracts/dashboard/conduit-settings';
import type { FeatureKernel } from '../../kernel/feature.js';
import { NO_HOOK_CONTEXT, toolText, type FeatureMcpTool } from '../../mcp/feature-tool.js';
import type { ProfileScope } from '../../notifier/notifier.js';
import { hermesSettingRefusal, isHermesSetting } from './hermes-settings.js';
import {
  anyDeviceSynced,
  deviceHandle,
  isOpen,
  newRequestId,
  SettingsStore,
  withCancelled,
  withChanges,
  withSeen,
  type ChangeInput,
  type RequestState,
  type SettingsDevice,
  type SettingsFile,
  type StoredRequest,
} from './settings-store.js';

/** The MCP tool through which Hermes asks Conduit to change its settings (the seed, conduit_settings). */
export const SETTINGS_TOOL = 'conduit_settings';

const LIMITS = CONDUIT_SETTINGS_LIMITS;

export const SETTINGS_TOOL_DESCRIPTION =
  "Read and ask to change the Conduit app's settings the user shares with you (how live calls sound, voices, which live mode to use …). " +
  'get lists each device with its settings (key, title, meaning, choices, value), its "Let Hermes change settings" mode, open requests and outcomes you have not seen. ' +
  `change asks for new values (changes: [{key, value, reason}], at most ${LIMITS.requestsPerCall} in one call and in one turn; value must be one of the setting's choices); ` +
  'Conduit applies it or asks the user, per their mode, and get later shows the outcome (applied, dismissed, conflict, refused, undone, expired). ' +
  `cancel takes back a request Conduit has not picked up. Requests wait a day; at most ${LIMITS.requestsPerDeviceHour} an hour per device. ` +
  "Speech providers and their keys, voice.gpt_live and models are Hermes' own settings, not Conduit's: change those in your own config.";

const settingValue = z.union([z.string(), z.number(), z.boolean()]);

/** The tool's arguments as the model sees them; the bounds are checked in changeArgs, with clear messages. */
export const settingsToolInput = {
  action: z.enum(['get', 'change', 'cancel']).describe('get reads; change asks; cancel takes a request back.'),
  device: z
    .string()
    .optional()
    .describe('get and change: a device id from get; default: the device that synced most recently.'),
  changes: z
    .array(z.object({ key: z.string(), value: settingValue, reason: z.string() }))
    .optional()
    .describe(
      `change: up to ${LIMITS.requestsPerCall} changes, each a shared setting's key, one of its choices, and why (shown to the user, ≤${LIMITS.reasonMaxChars} characters).`,
    ),
  key: z.string().optional().describe('change: one setting key (instead of changes).'),
  value: settingValue.optional().describe('change: the new value for key, one of its choices.'),
  reason: z.string().optional().describe('change: why, for the user.'),
  id: z.string().optional().describe('cancel: the request id change returned.'),
  _conduit_context: z.string().optional().describe('Filled in by the Conduit host for each call; leave it out.'),
};

const reasonText = z
  .string({ error: 'reason must be text' })
  .transform((text) => text.replace(/\p{Cc}+/gu, ' ').trim())
  .pipe(
    z
      .string()
      .min(1, { error: 'each change needs a reason, shown to the user' })
      .max(LIMITS.reasonMaxChars, { error: `reason must be at most ${LIMITS.reasonMaxChars} characters` }),
  );

const oneChange = z.object({
  key: z
    .string({ error: 'each change needs the setting key' })
    .trim()
    .min(1, { error: 'each change needs the setting key' }),
  value: z.union([z.string(), z.number(), z.boolean()], {
    error: "each change needs a value: one of the setting's choices (text, a number or true/false)",
  }),
  reason: reasonText,
});

/** change's arguments: a list, or one change given as key/value/reason. */
const changeArgs = z
  .object({
    changes: z
      .array(oneChange, { error: 'changes must be a list of {key, value, reason}' })
      .max(LIMITS.requestsPerCall, {
        error: `change takes at most ${LIMITS.requestsPerCall} changes in one call; ask for the most important ones`,
      })
      .optional(),
    key: z.string().optional(),
    value: settingValue.optional(),
    reason: z.string().optional(),
  })
  .transform((args, context) => {
    if (args.changes !== undefined && args.key !== undefined) {
      context.addIssue({ code: 'custom', message: 'give either changes or key/value/reason, not both' });
      return z.NEVER;
    }
    if (args.changes !== undefined) return args.changes;
    const single = oneChange.safeParse({ key: args.key, value: args.value, reason: args.reason ?? '' });
    if (!single.success) {
      context.addIssue({
        code: 'custom',
        message:
          args.key === undefined
            ? 'change needs changes: [{key, value, reason}] (or key, value and reason)'
            : (single.error.issues[0]?.message ?? 'change needs key, value and reason'),
      });
      return z.NEVER;
    }
    return [single.data];
  })
  .refine((changes) => changes.length > 0, { error: 'change needs at least one change' });

const iso = (unixS: number): string => new Date(unixS * 1000).toISOString();

/** What each state means to the model, so an open request is never read as done. */
const STATE_NOTES: Record<RequestState, string> = {
  waiting: 'Waiting for Conduit to pick it up; you can still cancel it.',
  picked_up: 'Conduit has it; the user may not have decided yet.',
  applied: 'Applied on the device.',
  dismissed: 'The user dismissed it; do not ask again unless they bring it up.',
  conflict: 'The user changed this setting after you read it, so their value was kept.',
  refused: 'Conduit refused it (see note).',
  undone: 'It was applied, then the user undid it.',
  expired: 'Nobody acted on it within a day.',
  cancelled: 'Cancelled.',
};

const MODE_NOTES: Record<ConduitSettingsMode, string> = {
  ask: 'Ask me every time: each change waits for the user to tap Apply.',
  small_without_asking:
    'Small changes without asking: small changes (how calls sound, voices) apply at once with an Undo; others wait for Apply.',
  off: 'Off: the user does not let Hermes change settings on this device; tell them where to change it in Conduit instead.',
};

function whatHappens(mode: ConduitSettingsMode, setting: ConduitSharedSetting | undefined): string {
  if (mode === 'small_without_asking' && setting?.tier === 'small')
    return 'Conduit applies it without asking, with an Undo.';
  return 'The user is asked to Apply it in Conduit.';
}

function requestForModel(request: StoredRequest) {
  return {
    id: request.id,
    device: deviceHandle(request.installation_id),
    key: request.key,
    value: request.value,
    seen_value: request.seen_value,
    reason: request.reason,
    state: request.state,
    requested_at: iso(request.requested_at),
    ...(isOpen(request.state) ? { expires_at: iso(request.expires_at) } : {}),
    ...(request.finished_at !== null && !isOpen(request.state) ? { finished_at: iso(request.finished_at) } : {}),
    ...(request.outcome_value !== null ? { value_now: request.outcome_value } : {}),
    ...(request.note !== null ? { note: request.note } : {}),
    meaning: STATE_NOTES[request.state],
  };
}

function deviceForModel(device: SettingsDevice, file: SettingsFile) {
  const open = new Map(
    file.requests
      .filter((request) => request.installation_id === device.installation_id && isOpen(request.state))
      .map((request) => [request.key, request.id]),
  );
  return {
    id: deviceHandle(device.installation_id),
    name: device.device,
    mode: device.mode,
    mode_note: MODE_NOTES[device.mode],
    synced_at: iso(device.synced_at),
    settings: device.settings.map((setting) => ({
      key: setting.key,
      title: setting.title,
      meaning: setting.meaning,
      tier: setting.tier,
      value: setting.value,
      choices: setting.choices.map((choice) => ({
        value: choice.value,
        ...(choice.title ? { title: choice.title } : {}),
      })),
      ...(open.has(setting.key) ? { open_request: open.get(setting.key) } : {}),
    })),
  };
}

/** The device a call names, or the one that synced most recently; a message when none fits. */
function pickDevice(file: SettingsFile, handle: string | undefined): SettingsDevice | string {
  if (handle !== undefined && handle !== '') {
    const named = file.devices.find((device) => deviceHandle(device.installation_id) === handle);
    return named ?? `No device ${handle} shares settings with this profile; get without device lists them.`;
  }
  const latest = [...file.devices].sort((a, b) => b.synced_at - a.synced_at)[0];
  return latest ?? 'No Conduit has shared its settings with this profile yet.';
}

const sameValue = (a: ConduitSettingValue, b: ConduitSettingValue): boolean => a === b;

/** Checks the changes against what the device shares now; the inputs to keep, or the first refusal. */
function checkChanges(
  device: SettingsDevice,
  changes: readonly { key: string; value: ConduitSettingValue; reason: string }[],
): ChangeInput[] | string {
  if (device.mode === 'off') {
    return `On ${device.device || 'this device'} the user has turned "Let Hermes change settings" off, so Conduit refuses every change; tell the user where to change it in Conduit's Settings instead.`;
  }
  const byKey = new Map(device.settings.map((setting) => [setting.key, setting]));
  const asked = new Set<string>();
  const inputs: ChangeInput[] = [];
  for (const change of changes) {
    if (asked.has(change.key)) return `${change.key} is asked for twice in this call; ask for one value.`;
    asked.add(change.key);
    const setting = byKey.get(change.key);
    if (!setting) {
      return `${change.key} is not a setting ${device.device || 'this device'} shares with Hermes, so it is out of your reach (get lists the ones it shares; the user changes the others in Conduit).`;
    }
    if (!setting.choices.some((choice) => sameValue(choice.value, change.value))) {
      const choices = setting.choices.map((choice) => JSON.stringify(choice.value)).join(', ');
      return `${JSON.stringify(change.value)} is not a choice of ${change.key}; its choices are ${choices}.`;
    }
    if (sameValue(setting.value, change.value)) {
      return `${change.key} is already ${JSON.stringify(change.value)} on ${device.device || 'this device'}; nothing to change.`;
    }
    inputs.push({ key: change.key, value: change.value, seenValue: setting.value, reason: change.reason });
  }
  return inputs;
}

const answer = (body: Record<string, unknown>) => toolText(JSON.stringify(body));
const refuse = (error: string) => toolText(JSON.stringify({ ok: false, error }), true);

interface CallEnv {
  profile: ProfileScope;
  kernel: FeatureKernel;
  sessionId: string;
  turnId: string | null;
}

const nowS = (env: CallEnv): number => env.kernel.clock.now() / 1000;

async function get(args: Record<string, unknown>, env: CallEnv) {
  const handle = typeof args.device === 'string' && args.device !== '' ? args.device : undefined;
  // The outcomes told now are marked seen in the same step, so the next get does not repeat them.
  const shown = await new SettingsStore(env.profile.home).update(nowS(env), (file) => {
    const devices = handle
      ? file.devices.filter((device) => deviceHandle(device.installation_id) === handle)
      : [...file.devices].sort((a, b) => b.synced_at - a.synced_at);
    if (devices.length === 0) return { file, result: null };
    const ids = new Set(devices.map((device) => device.installation_id));
    const requests = file.requests.filter((request) => ids.has(request.installation_id));
    const outcomes = requests.filter((request) => !isOpen(request.state) && !request.seen);
    return {
      file: withSeen(
        file,
        outcomes.map((request) => request.id),
      ),
      result: {
        devices: devices.map((device) => deviceForModel(device, file)),
        open: requests.filter((request) => isOpen(request.state)),
        outcomes,
      },
    };
  });
  if (!shown) {
    return refuse(
      handle
        ? `No device ${handle} shares settings with this profile; get without device lists them.`
        : 'No Conduit has shared its settings with this profile yet.',
    );
  }
  return answer({
    ok: true,
    devices: shown.devices,
    open_requests: shown.open.map(requestForModel),
    outcomes: shown.outcomes.map(requestForModel),
  });
}

type ChangeOutcome =
  { ok: true; device: SettingsDevice; created: StoredRequest[]; replaced: string[] } | { ok: false; message: string };

async function change(args: Record<string, unknown>, env: CallEnv) {
  const parsed = changeArgs.safeParse(args);
  if (!parsed.success) return refuse(parsed.error.issues[0]?.message ?? 'The arguments are not valid');
  // Hermes' own settings first: whatever a Conduit shares, these are changed in Hermes' config.
  const hermesKey = parsed.data.find((one) => isHermesSetting(one.key));
  if (hermesKey) return refuse(hermesSettingRefusal(hermesKey.key));
  const handle = typeof args.device === 'string' && args.device !== '' ? args.device : undefined;
  const ids = parsed.data.map(() => newRequestId());
  const at = nowS(env);
  const outcome = await new SettingsStore(env.profile.home).update<ChangeOutcome>(at, (file) => {
    const device = pickDevice(file, handle);
    if (typeof device === 'string') return { file, result: { ok: false as const, message: device } };
    const inputs = checkChanges(device, parsed.data);
    if (typeof inputs === 'string') return { file, result: { ok: false as const, message: inputs } };
    const kept = withChanges(
      file,
      inputs,
      { installationId: device.installation_id, sessionId: env.sessionId, turnId: env.turnId },
      ids,
      at,
    );
    if (!kept.result.ok) return { file, result: { ok: false as const, message: kept.result.message } };
    return {
      file: kept.file,
      result: { ok: true as const, device, created: kept.result.created, replaced: kept.result.replaced },
    };
  });
  if (!outcome.ok) return refuse(outcome.message);
  env.kernel.log.info('conduit_settings change', { requests: outcome.created.length, mode: outcome.device.mode });
  const settings = new Map(outcome.device.settings.map((setting) => [setting.key, setting]));
  return answer({
    ok: true,
    device: {
      id: deviceHandle(outcome.device.installation_id),
      name: outcome.device.device,
      mode: outcome.device.mode,
    },
    requests: outcome.created.map((request) => ({
      ...requestForModel(request),
      what_happens: whatHappens(outcome.device.mode, settings.get(request.key)),
    })),
    ...(outcome.replaced.length > 0 ? { replaced: outcome.replaced } : {}),
    note: 'Nothing has changed yet: Conduit picks requests up when it next syncs (when it opens, comes to the foreground, or after this turn), and get shows the outcome.',
  });
}

async function cancel(args: Record<string, unknown>, env: CallEnv) {
  const id = typeof args.id === 'string' && args.id !== '' ? args.id : null;
  if (!id) return refuse('cancel needs the id change returned.');
  const at = nowS(env);
  const result = await new SettingsStore(env.profile.home).update(at, (file) => withCancelled(file, id, at));
  if (result.ok) return answer({ ok: true, request: requestForModel(result.request) });
  if (result.reason === 'unknown') return refuse(`No settings request ${id} (finished requests are kept a week).`);
  if (result.reason === 'picked_up') {
    return refuse(
      `Conduit has already picked up request ${id}, so it can no longer be taken back; get shows what the user did.`,
    );
  }
  return refuse(`Request ${id} has already finished (${result.request?.state ?? 'finished'}); nothing to cancel.`);
}

/** conduit_settings over MCP: offered once a Conduit has uploaded its settings; subagents cannot ask. */
export function settingsTool(): FeatureMcpTool {
  return {
    name: SETTINGS_TOOL,
    needsContext: true,
    visible: async ({ profile, kernel }) =>
      anyDeviceSynced(await new SettingsStore(profile.home).read(kernel.clock.now() / 1000)),
    register(server, { profile, kernel, verify }) {
      server.registerTool(
        SETTINGS_TOOL,
        {
          title: "Read and ask to change Conduit's settings",
          description: SETTINGS_TOOL_DESCRIPTION,
          inputSchema: settingsToolInput,
          annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
        },
        async (args) => {
          const context = verify(args);
          if (!context) return refuse(NO_HOOK_CONTEXT);
          // A subagent's request would reach the user out of sight of the chat; its parent can ask.
          if (context.isChild)
            return refuse(`${SETTINGS_TOOL} is not available to subagents; the main chat can ask for the change.`);
          const env: CallEnv = { profile, kernel, sessionId: context.sessionId, turnId: context.turnId ?? null };
          try {
            if (args.action === 'get') return await get(args, env);
            if (args.action === 'change') return await change(args, env);
            return await cancel(args, env);
          } catch (error) {
            kernel.log.warn('conduit_settings failed', { error: error instanceof Error ? error.name : 'error' });
            return refuse('The settings requests of this profile could not be read or written.');
          }
        },
      );
    },
  };
}
