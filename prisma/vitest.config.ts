import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['./src/testing/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Vite resolves workspace packages to their TypeScript sources (the `development` export
    // condition); NODE_OPTIONS gives the same condition to every process a test starts with
    // `node --import tsx`, so no test runs a stale or missing dist/ of a workspace package.
    env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --conditions=development`.trim() },
  },
});
