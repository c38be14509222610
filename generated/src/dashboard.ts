/**
 * The host service's Conduit plugin routes (server-dashboard, mounted under the Hermes dashboard): a
 * typed client over the locked OpenAPI snapshot and the Zod contracts of its routes.
 */
export { createDashboardClient } from '../dashboard/client.js';
export type { paths, components, operations } from '../dashboard/schema.js';
export * from '@conduit/contracts/dashboard/index';
