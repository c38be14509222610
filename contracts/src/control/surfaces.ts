import { hostControlSurface } from '../dashboard/control.js';
import { relayAdminSurface } from '../relay/admin.js';
import type { ControlSurface } from './procedures.js';

/** Every tRPC control surface whose OpenAPI snapshot lives in contracts/openapi/<name>.openapi.json. */
export const controlSurfaces: readonly ControlSurface[] = [relayAdminSurface, hostControlSurface];
