#!/usr/bin/env node
// Runs the build in dist/ (`npm install` makes it, through `prepare`, as does `npm run build`):
// without a TypeScript loader the process needs about 40 MiB less memory. When a source is newer
// than the build (an edit, a pull without `npm install`), the sources run through tsx instead,
// so what runs is always what src/ says.
import { fileURLToPath, pathToFileURL } from 'node:url'
import { entryOf } from './entry.js'

const entry = entryOf(fileURLToPath(new URL('..', import.meta.url)))
if (entry.kind === 'sources') {
  const { register } = await import('tsx/esm/api')
  register()
}
await import(pathToFileURL(entry.file).href)
