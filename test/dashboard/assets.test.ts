import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { signedIn } from '../support/dashboard.ts'

const app = useTestApp()

describe('assets', () => {
  it('are served by the app with long caching for their versioned address, and 304 when unchanged', async () => {
    const { browser } = await signedIn(app)
    const page = await browser.get('/dashboard')
    const hrefs = [...page.html.matchAll(/(?:href|src)="(\/dashboard\/assets\/[^"]+)"/g)].map(
      (m) => m[1] as string,
    )
    expect(hrefs).toHaveLength(3)
    for (const href of hrefs) {
      const res = await app.requestRoot(href.replaceAll('&amp;', '&'))
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      const again = await app.requestRoot(href, {
        headers: { 'if-none-match': res.headers.get('etag') as string },
      })
      expect(again.status).toBe(304)
    }
    expect(page.html).not.toMatch(/(?:href|src)="(?:https?:)?\/\//)
  })
})
