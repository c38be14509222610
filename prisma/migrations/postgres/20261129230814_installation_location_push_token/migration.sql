-- AlterTable
ALTER TABLE "Installation" ADD COLUMN     "locationPushToken" TEXT;
