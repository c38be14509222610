-- CreateTable
CREATE TABLE "Installation" (
    "id" TEXT NOT NULL,
    "bundleId" TEXT NOT NULL,
    "deviceToken" TEXT NOT NULL,
    "voipToken" TEXT,
    "watchVoipToken" TEXT,
    "environment" TEXT NOT NULL,
    "deviceSecretHash" TEXT NOT NULL,
    "active" BOOLEAN NOT NULL,
    "preferences" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Installation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Gateway" (
    "installationId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "secretHash" TEXT NOT NULL,
    "dashboardId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "pluginVersion" TEXT,
    "pluginCapabilities" TEXT,
    "lastEventAt" TIMESTAMP(3),

    CONSTRAINT "Gateway_pkey" PRIMARY KEY ("installationId","id")
);

-- CreateTable
CREATE TABLE "Pairing" (
    "codeHash" TEXT NOT NULL,
    "installationId" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "dashboardId" TEXT,

    CONSTRAINT "Pairing_pkey" PRIMARY KEY ("codeHash")
);

-- CreateTable
CREATE TABLE "Decision" (
    "key" TEXT NOT NULL,
    "installationId" TEXT NOT NULL,
    "gatewayId" TEXT NOT NULL,
    "requestId" TEXT NOT NULL,
    "question" TEXT NOT NULL,
    "choices" TEXT NOT NULL,
    "questions" TEXT NOT NULL,
    "answers" TEXT NOT NULL,
    "deliverable" BOOLEAN NOT NULL,
    "active" BOOLEAN NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "answer" TEXT,
    "answeredAt" TIMESTAMP(3),
    "cancelledAt" TIMESTAMP(3),

    CONSTRAINT "Decision_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "Pairing_installationId_idx" ON "Pairing"("installationId");

-- CreateIndex
CREATE INDEX "Decision_installationId_requestId_idx" ON "Decision"("installationId", "requestId");

-- CreateIndex
CREATE INDEX "Decision_createdAt_idx" ON "Decision"("createdAt");
