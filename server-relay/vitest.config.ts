import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['../prisma/src/testing/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Vite resolves workspace packages to their TypeScript sources (the `development` export
    // condition); NODE_OPTIONS gives the same condition to every process a test starts with
    // `node --import tsx`, so no test runs a stale or missing dist/ of a workspace package.
    env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --conditions=development`.trim() },
    // Every test once; the conformance suite a second time against 3 replicas on PostgreSQL + Redis
    // (test/conformance/relay.ts, CONFORMANCE_TARGET).
    projects: [
      { extends: true, test: { name: 'relay' } },
      {
        extends: true,
        test: {
          name: 'conformance-cluster',
          include: ['test/conformance/**/*.test.ts'],
          env: { CONFORMANCE_TARGET: 'cluster' },
        },
      },
    ],
  },
});
