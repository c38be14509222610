import { z } from 'zod';
import { defineRoute } from '../route.js';
import { detailAnswer, detailUnavailable, noStoreAnswer } from './detail-error.js';
import { unauthorized } from './notification-settings.js';

export const capabilitiesResponse = z.object({
  ok: z.literal(true),
  /** Version of the code on disk. */
  version: z.string().nullable(),
  /** Version of the code this process loaded; differs from `version` after an update without restart. */
  loaded_version: z.string().nullable(),
  restart_needed: z.boolean(),
  /** Random id of this process's start, so clients notice restarts. */
  boot_id: z.string(),
  /** Route families this service serves, in a stable order. */
  capabilities: z.array(z.string()),
});

/** Lists what the host service serves, so the Conduit app shows only what works. No profile, no rate limit. */
export const getCapabilities = defineRoute({
  method: 'GET',
  path: '/api/plugins/conduit_push/capabilities',
  operationId: 'getCapabilities',
  summary: 'Capabilities of the host service',
  tags: ['plugin'],
  auth: 'none',
  responses: {
    200: noStoreAnswer('What this service serves.', capabilitiesResponse),
  },
});

export const selfRestartResponse = z.object({
  ok: z.literal(true),
  /** Always true: the service re-executes itself about a second after answering. */
  restarting: z.literal(true),
  /** The boot id of the process answering; the restarted one reports a new one in `GET /capabilities`. */
  boot_id: z.string(),
  loaded_version: z.string().nullable(),
  /** The version on disk, which the restarted process loads. */
  version: z.string().nullable(),
});

/**
 * Restarts the host service in place (the Conduit app's "Update plugin" flow, after Hermes' own plugin
 * update and gateway restart): it answers, then re-executes itself with the command line it started
 * with, keeping its pid, so systemd, launchd and terminal launches carry on.
 */
export const postSelfRestart = defineRoute({
  method: 'POST',
  path: '/api/plugins/conduit_push/self/restart',
  operationId: 'postSelfRestart',
  summary: 'Restart the host service in place',
  tags: ['plugin'],
  auth: 'bearer',
  responses: {
    200: noStoreAnswer('The restart is under way.', selfRestartResponse),
    401: unauthorized,
    409: detailAnswer('A call or stream this service relays is still running, or a restart is already under way.'),
    501: detailAnswer(
      'This service cannot re-execute itself here (Windows, a Node.js without process.execve, or not started by its own command); restart it yourself.',
    ),
    503: detailUnavailable('The dashboard could not confirm the caller.'),
  },
});

/** What Hermes' own plugin update answers (`hermes_cli.plugins_cmd.dashboard_update_user_plugin`). */
export const pluginUpdateResponse = z.object({
  ok: z.literal(true),
  name: z.literal('conduit_push'),
  /** What the update did, in a few lines (git's own summary; no credential, no path outside the checkout). */
  output: z.string(),
  /** True when the checkout was already up to date: nothing was built, no restart is needed. */
  unchanged: z.boolean(),
});

/**
 * Hermes' plugin-update route for this service's plugin name. Hermes would `git pull` its plugin folder,
 * which for this service holds only the CLI shim, so the host answers it itself: it brings this
 * service's own checkout up to date (`git pull --ff-only`, then `npm ci` and `npm run build`), answering
 * as Hermes does. The app then restarts the gateway and calls `POST /self/restart`.
 */
export const postPluginUpdate = defineRoute({
  method: 'POST',
  path: '/api/dashboard/agent-plugins/conduit_push/update',
  operationId: 'postPluginUpdate',
  summary: "Update the host service's code (the app's Update plugin)",
  tags: ['plugin'],
  auth: 'bearer',
  responses: {
    200: noStoreAnswer('The update ran (or there was nothing to pull).', pluginUpdateResponse),
    400: detailAnswer(
      'The update could not run: not a git checkout, the pull was refused (local changes, diverged), or the build failed.',
    ),
    401: unauthorized,
    409: detailAnswer('An update is already running.'),
    503: detailUnavailable('The dashboard could not confirm the caller.'),
  },
});
