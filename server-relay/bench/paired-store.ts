import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createDb, migrate } from '@conduit/prisma';
import { normalizePreferences } from '../src/domain/preferences.js';

/** The gateway secret every seeded gateway shares (base64url characters, as a real one). */
export const SEEDED_GATEWAY_SECRET = 'bench-gateway-secret';

/**
 * Writes `count` installations, each paired with one gateway, before a relay starts on the store (the
 * relay's credential index loads both at boot). Resolves with the gateway credentials in seeding order.
 */
export async function seedPairedInstallations(url: string, count: number, topic: string): Promise<string[]> {
  await migrate(url);
  const db = createDb(url);
  const preferences = JSON.stringify(normalizePreferences({}));
  const now = new Date();
  const secretHash = createHash('sha256').update(SEEDED_GATEWAY_SECRET).digest('hex');
  const credentials: string[] = [];
  try {
    for (let start = 0; start < count; start += 2000) {
      const installations = [];
      const gateways = [];
      for (let i = start; i < Math.min(count, start + 2000); i += 1) {
        const id = randomUUID();
        const gatewayId = randomUUID();
        installations.push({
          id,
          bundleId: topic,
          deviceToken: randomBytes(32).toString('hex'),
          environment: 'production',
          deviceSecretHash: createHash('sha256').update(randomBytes(8)).digest('hex'),
          active: true,
          preferences,
          createdAt: now,
          updatedAt: now,
          pairedAt: now,
          lastSeenAt: now,
        });
        gateways.push({ installationId: id, id: gatewayId, name: 'bench', secretHash, createdAt: now });
        credentials.push(`${id}.${gatewayId}.${SEEDED_GATEWAY_SECRET}`);
      }
      await db.installation.createMany({ data: installations });
      await db.gateway.createMany({ data: gateways });
    }
  } finally {
    await db.$disconnect();
  }
  return credentials;
}
