import { defineConfig } from 'vitest/config'
import base from './vitest.config.ts'

/** `npm run screenshots`: the dashboard's main pages as PNGs in docs/screenshots (not part of npm test). */
export default defineConfig({
  test: {
    ...base.test,
    include: ['scripts/screenshots.ts'],
    testTimeout: 300_000,
  },
})
