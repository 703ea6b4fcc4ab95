import path from 'node:path'
import { packageFile, type StaticAsset, staticAsset } from '../net/static-asset.ts'
import { PROJECT_ROOT } from '../project-root.ts'
import type { Dashboard } from './env.ts'

const ASSETS_DIR = path.join(PROJECT_ROOT, 'src', 'dashboard', 'assets')

/** What every page loads: Pico CSS from its npm package, and the dashboard's own few lines. */
export const ASSETS = {
  pico: staticAsset(
    packageFile('@picocss/pico', 'css/pico.min.css'),
    '/dashboard/assets/pico.css',
    'text/css; charset=utf-8',
  ),
  style: staticAsset(
    path.join(ASSETS_DIR, 'dashboard.css'),
    '/dashboard/assets/dashboard.css',
    'text/css; charset=utf-8',
  ),
  script: staticAsset(
    path.join(ASSETS_DIR, 'dashboard.js'),
    '/dashboard/assets/dashboard.js',
    'text/javascript; charset=utf-8',
  ),
} satisfies Record<string, StaticAsset>

export function registerAssets(app: Dashboard): void {
  for (const asset of Object.values(ASSETS)) {
    app.get(asset.path, (c) => asset.respond(c.req.raw))
  }
}
