-- CreateTable
CREATE TABLE "Installation" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "bundleId" TEXT NOT NULL,
    "deviceToken" TEXT NOT NULL,
    "voipToken" TEXT,
    "watchVoipToken" TEXT,
    "environment" TEXT NOT NULL,
    "deviceSecretHash" TEXT NOT NULL,
    "active" BOOLEAN NOT NULL,
    "preferences" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "Gateway" (
    "installationId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "secretHash" TEXT NOT NULL,
    "dashboardId" TEXT,
    "createdAt" DATETIME NOT NULL,
    "pluginVersion" TEXT,
    "pluginCapabilities" TEXT,
    "lastEventAt" DATETIME,

    PRIMARY KEY ("installationId", "id")
);

-- CreateTable
CREATE TABLE "Pairing" (
    "codeHash" TEXT NOT NULL PRIMARY KEY,
    "installationId" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "dashboardId" TEXT
);

-- CreateTable
CREATE TABLE "Decision" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "installationId" TEXT NOT NULL,
    "gatewayId" TEXT NOT NULL,
    "requestId" TEXT NOT NULL,
    "question" TEXT NOT NULL,
    "choices" TEXT NOT NULL,
    "questions" TEXT NOT NULL,
    "answers" TEXT NOT NULL,
    "deliverable" BOOLEAN NOT NULL,
    "active" BOOLEAN NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "answer" TEXT,
    "answeredAt" DATETIME,
    "cancelledAt" DATETIME
);

-- CreateIndex
CREATE INDEX "Pairing_installationId_idx" ON "Pairing"("installationId");

-- CreateIndex
CREATE INDEX "Decision_installationId_requestId_idx" ON "Decision"("installationId", "requestId");

-- CreateIndex
CREATE INDEX "Decision_createdAt_idx" ON "Decision"("createdAt");
