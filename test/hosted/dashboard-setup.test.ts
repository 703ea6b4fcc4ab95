/**
 * The hosted pages' set-up in the dashboard: the audience's sign-up page and the Forms pages
 * (create, edit, disable, delete), each with its public address, a paste-ready snippet, and its
 * count of sign-ups or submissions; another account's form is a 404.
 */
import { describe, expect, it } from 'vitest'
import { createAudience } from '../../src/audiences/audiences.ts'
import { HONEYPOT_FIELD } from '../../src/forms/submission.ts'
import { useTestApp } from '../support/app.ts'
import { expectRedirect, signedIn, textOf } from '../support/dashboard.ts'

const PUBLIC = 'https://mail.example.test'
const app = useTestApp({ publicUrl: PUBLIC })

/** The value of the read-only box `id` on the page. */
function boxValue(html: string, id: string): string | undefined {
  const input = new RegExp(`id="${id}"[^>]*value="([^"]*)"`).exec(html)?.[1]
  const area = new RegExp(`<textarea id="${id}"[^>]*>([\\s\\S]*?)</textarea>`).exec(html)?.[1]
  const raw = input ?? area
  return raw === undefined ? undefined : textOf(`<p>${raw}</p>`)
}

describe("an audience's sign-up page", () => {
  it('is set up, shown with its address and snippet, disabled and enabled, and counts sign-ups', async () => {
    const { browser, account } = await signedIn(app, { plan: 'pro' })
    const audience = await createAudience(app.services.sql, account.id, { name: 'Readers' })
    const path = `/dashboard/audiences/${audience.id}`
    expect(textOf((await browser.get(path)).html)).toContain('Set up a sign-up page')
    const bad = await browser.post(`${path}/signup-page`, { slug: 'No Good', title: '' })
    expect(bad.status).toBe(400)
    expect(textOf(bad.html)).toContain('A slug is 3 to 64 characters')
    expectRedirect(
      await browser.post(`${path}/signup-page`, {
        slug: 'readers',
        title: 'Our readers',
        description: 'Weekly',
      }),
      `${path}#signup-page`,
    )
    const shown = await browser.get(path)
    expect(boxValue(shown.html, 'signup-url')).toBe(`${PUBLIC}/signup/readers`)
    const snippet = boxValue(shown.html, 'signup-snippet') ?? ''
    expect(snippet).toContain(`<form method="post" action="${PUBLIC}/signup/readers">`)
    expect(snippet).toContain(`name="${HONEYPOT_FIELD}"`)
    expect(textOf(shown.html)).toContain('Open · 0 sign-ups through it')
    expect(
      (
        await app.requestRoot('/signup/readers', {
          method: 'POST',
          body: new URLSearchParams({ email: 'r@example.com' }),
        })
      ).status,
    ).toBe(200)
    expect(textOf((await browser.get(path)).html)).toContain('Open · 1 sign-up through it')
    expectRedirect(await browser.post(`${path}/signup-page/disable`), `${path}#signup-page`)
    expect(textOf((await browser.get(path)).html)).toContain('Disabled (answers 404)')
    expect((await app.requestRoot('/signup/readers')).status).toBe(404)
    expectRedirect(await browser.post(`${path}/signup-page/enable`), `${path}#signup-page`)
    expect((await app.requestRoot('/signup/readers')).status).toBe(200)
  })

  it('refuses a slug another audience has, with the reason', async () => {
    const { browser, account } = await signedIn(app, { plan: 'pro' })
    const a = await createAudience(app.services.sql, account.id, { name: 'A' })
    const b = await createAudience(app.services.sql, account.id, { name: 'B' })
    await browser.get(`/dashboard/audiences/${a.id}`)
    expect(
      (await browser.post(`/dashboard/audiences/${a.id}/signup-page`, { slug: 'taken-slug' })).status,
    ).toBe(303)
    const refused = await browser.post(`/dashboard/audiences/${b.id}/signup-page`, { slug: 'taken-slug' })
    expect(refused.status).toBe(409)
    expect(textOf(refused.html)).toContain('/signup/taken-slug is taken')
  })
})

describe('Forms', () => {
  it('are created, listed with their counts, edited, and deleted; each with its address and snippet', async () => {
    const { browser } = await signedIn(app)
    expect(textOf((await browser.get('/dashboard/forms')).html)).toContain('No form yet')
    const bad = await browser.post('/dashboard/forms', { name: 'Contact', redirect_url: 'ftp://x' })
    expect(bad.status).toBe(400)
    expect(textOf(bad.html)).toContain('redirect URL must be an http or https address')
    const broken = await browser.post('/dashboard/forms', {
      name: 'Contact',
      redirect_url: 'https://example.com/thanks\r\nSet-Cookie: a=b',
    })
    expect(broken.status).toBe(400)
    expect(textOf(broken.html)).toContain(
      'The redirect URL cannot contain line breaks, tabs or other control characters',
    )
    const created = await browser.post('/dashboard/forms', {
      name: 'Contact',
      redirect_url: 'https://example.com/thanks',
      allowed_origins: 'https://example.com\nhttps://www.example.com',
    })
    expectRedirect(created, '/dashboard/forms')
    const list = await browser.get('/dashboard/forms')
    const id = Number(/href="\/dashboard\/forms\/([0-9]+)"/.exec(list.html)?.[1])
    const detail = await browser.get(`/dashboard/forms/${id}`)
    const url = boxValue(detail.html, 'form-url') ?? ''
    expect(url).toMatch(new RegExp(`^${PUBLIC}/forms/[A-Za-z0-9_-]{22}$`))
    expect(boxValue(detail.html, 'form-snippet')).toContain(`action="${url}"`)
    expect(textOf(detail.html)).toContain('0 submissions')
    expectRedirect(
      await browser.post(`/dashboard/forms/${id}`, {
        name: 'Contact us',
        redirect_url: '',
        allowed_origins: '',
      }),
      `/dashboard/forms/${id}`,
    )
    const edited = await browser.get(`/dashboard/forms/${id}`)
    expect(textOf(edited.html)).toContain('Contact us')
    const other = await signedIn(app)
    expect((await other.browser.get(`/dashboard/forms/${id}`)).status).toBe(404)
    expect((await other.browser.post(`/dashboard/forms/${id}/delete`)).status).toBe(404)
    expectRedirect(await browser.post(`/dashboard/forms/${id}/delete`), '/dashboard/forms')
    expect((await app.requestRoot(new URL(url).pathname)).status).toBe(404)
  })
})
