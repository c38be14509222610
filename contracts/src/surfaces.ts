import type { Surface } from './route.js';
import { relaySurface } from './relay/index.js';
import { dashboardSurface } from './dashboard/index.js';
import { voiceSurface } from './voice/index.js';

/** Every surface whose OpenAPI snapshot lives in contracts/openapi/<name>.openapi.json. */
export const surfaces: readonly Surface[] = [relaySurface, dashboardSurface, voiceSurface];
