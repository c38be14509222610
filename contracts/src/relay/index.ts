import type { Surface } from '../route.js';
import { healthz } from './health.js';

export { healthz };

/** The push relay's wire surface: every route the Conduit app, the Watch and host plugins call. */
export const relaySurface = {
  name: 'relay',
  title: 'Conduit push relay',
  version: '0.11.0',
  description:
    'Registers phones and Watches, pairs Hermes hosts with them and delivers host events through APNs. Wire-compatible with the reference relay.',
  routes: { healthz },
} satisfies Surface;
