import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      // The generated clients; the SDK's own entries (generated/src) and build script are linted.
      'generated/{relay,dashboard,voice,relay-messenger}/**',
      'prisma/src/generated/**',
      'contracts/.check-*/**',
      'data/**',
      '**/*.d.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // ARCHITECTURE.md, "The host service grows by features": a feature imports the kernel, never another
    // feature (what two features share moves to src/kernel/, with an interface there where they must talk).
    files: ['server-dashboard/src/features/*/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./(?!\\.\\./)[^/]+/',
              message:
                'A feature imports the kernel, never another feature: move what they share to server-dashboard/src/kernel/.',
            },
          ],
        },
      ],
    },
  },
);
