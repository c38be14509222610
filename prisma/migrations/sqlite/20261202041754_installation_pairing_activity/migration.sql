-- AlterTable
ALTER TABLE "Installation" ADD COLUMN "lastSeenAt" DATETIME;
ALTER TABLE "Installation" ADD COLUMN "pairedAt" DATETIME;

-- Backfill. An installation with a host was paired (a reference store has no date for it: its
-- registration stands in). Every existing installation counts as seen now, so none expires as
-- "never paired, not seen" until a full TTL after the upgrade (the format is the one Prisma writes).
UPDATE "Installation" SET "pairedAt" = "createdAt"
WHERE EXISTS (SELECT 1 FROM "Gateway" WHERE "Gateway"."installationId" = "Installation"."id");
UPDATE "Installation" SET "lastSeenAt" = strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now');
