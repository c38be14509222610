-- AlterTable
ALTER TABLE "Installation" ADD COLUMN     "lastSeenAt" TIMESTAMP(3),
ADD COLUMN     "pairedAt" TIMESTAMP(3);

-- Backfill. An installation with a host was paired (a reference store has no date for it: its
-- registration stands in). Every existing installation counts as seen now, so none expires as
-- "never paired, not seen" until a full TTL after the upgrade (UTC wall time, as Prisma writes it).
UPDATE "Installation" SET "pairedAt" = "createdAt"
WHERE EXISTS (SELECT 1 FROM "Gateway" WHERE "Gateway"."installationId" = "Installation"."id");
UPDATE "Installation" SET "lastSeenAt" = (now() AT TIME ZONE 'UTC');
