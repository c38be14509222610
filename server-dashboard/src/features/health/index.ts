import { HEALTH_LABEL, HEALTH_LIMITS, healthRoutes } from '@conduit/contracts/dashboard/health';
import type { HostFeature } from '../../kernel/feature.js';
import { sealedIngest } from '../../kernel/phone-data/index.js';
import { healthShared, healthTool } from './health-tool.js';
import { healthVoiceTool } from './health-voice-tool.js';
export { healthVoiceTool } from './health-voice-tool.js';
export { HEALTH_SHAPE, readHealth, type HealthReadContext, type HealthReadResult } from './health-reads.js';
import {
  HEALTH_DEVICE_TABLES,
  HEALTH_SCHEMA,
  parseHealthBatch,
  storeHealthBatch,
  summarizeHealth,
} from './health-store.js';

/**
 * Health (`health`): Apple Health summaries the phone shares with the profile, sealed end to end on
 * the phone-data core and kept in the profile's conduit-health.sqlite3 (the seed, Health).
 */
export const healthFeature: HostFeature = {
  ...sealedIngest({
    feature: 'health',
    title: 'Health',
    label: HEALTH_LABEL,
    routes: healthRoutes,
    limits: {
      devicesPerProfile: HEALTH_LIMITS.devicesPerProfile,
      // The seed's health bound is 4 MiB (health batches carry up to 6,000 items); location's is 256 KiB.
      sealedBatchMaxBytes: HEALTH_LIMITS.sealedBatchMaxBytes,
      uploadsPerMinute: HEALTH_LIMITS.uploadsPerMinute,
    },
    store: { schema: HEALTH_SCHEMA, deviceTables: HEALTH_DEVICE_TABLES },
    parseBatch: parseHealthBatch,
    storeBatch: storeHealthBatch,
    summarize: summarizeHealth,
  }),
  tools: [healthTool],
  sharedData: [{ what: 'health data', tool: 'conduit_health', shared: healthShared }],
  voiceTools: [healthVoiceTool],
};
