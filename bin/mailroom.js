#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=100
// The flags give V8 a young generation of 16 MiB instead of 32, and let the old generation grow
// to twice what survived its last collection before the next, where V8 allows up to four times:
// together about 70 MiB less resident memory under load, at the same throughput (see
// docs/decisions.md). `npm start` runs this file, and `node bin/mailroom.js` works too, without them.
//
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
