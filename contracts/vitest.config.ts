import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // *.test-d.ts files are type-level tests: vitest runs tsc on them (tsc -p also checks them).
    typecheck: { enabled: true, tsconfig: './tsconfig.json' },
  },
});
