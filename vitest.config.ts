import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'sdk/test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Separate processes, not threads: workers must start after global setup so that they read
    // the NODE_EXTRA_CA_CERTS it sets (Node reads it only at process start).
    pool: 'forks',
    // A worker runs its files one after another in one process, importing the service's modules
    // once rather than once a file (about two seconds of CPU each). Files share nothing else:
    // each test app has a database of its own, and no module of src/ keeps state of its own
    // (test/architecture/shared-state.test.ts).
    isolate: false,
    // Most tests wait on sockets, timers and PostgreSQL rather than the CPU: three files at once
    // keep a 2-core machine busy (vitest's default, one fewer than the cores, runs them in turn).
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
