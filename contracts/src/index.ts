export * from './route.js';
export { relaySurface } from './relay/index.js';
export { dashboardSurface } from './dashboard/index.js';
export { voiceSurface } from './voice/index.js';
