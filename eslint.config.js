import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      // The native addon's build output and its CommonJS loader (like bin/*.js: a few lines, no TypeScript).
      'packages/malloc-trim/build/**',
      'packages/malloc-trim/index.*',
      'packages/native-spawn/build/**',
      'packages/native-spawn/index.*',
      'dist-agent/**',
      '.build/**',
      'data/**',
      'node_modules/**',
      '**/bin/*.js',
      'eslint.config.js',
      // openapi-typescript's output, checked against the served document by packages/web/test/api-types.test.ts.
      'packages/web/src/api/openapi.gen.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      'no-restricted-imports': 'off',
    },
  },
  {
    // Tests read arbitrary JSON responses; the assertions are the type check there.
    files: ['packages/*/test/**/*.ts', 'e2e/**/*.ts', 'test-support/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
  {
    // Domain code stays free of frameworks, drivers and the process environment.
    files: ['packages/server/src/core/**/*.ts', 'packages/protocol/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['fastify', '@fastify/*', 'ws', 'ssh2', 'kysely', 'better-sqlite3', 'pg', 'mysql2'],
              message: 'Domain code must not import adapters.',
            },
            {
              group: ['**/http/**', '**/storage/**', '**/gateway/**', '**/cli/**'],
              message: 'core depends only on protocol and its own ports.',
            },
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read configuration in main/cli and pass it in.' },
      ],
    },
  },
);
