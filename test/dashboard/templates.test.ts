import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { signedIn, textOf } from '../support/dashboard.ts'

const app = useTestApp()

describe('templates', () => {
  it('preview placeholders filled from sample values, escaped in the HTML, without saving', async () => {
    const { browser, account } = await signedIn(app)
    await browser.get('/dashboard/templates')
    await browser.post('/dashboard/templates', {
      name: 'Welcome',
      subject: 'Hi {{name}}',
      text_body: 'Hello {{ name }}, {{attr_1}}',
      html_body: '<p>{{name}}</p>',
    })
    const [row] = await app.services.sql<
      { id: number }[]
    >`select id from templates where account_id = ${account.id}`
    const first = await browser.get(`/dashboard/templates/${row?.id}`)
    expect(first.html).toContain('value="name=name, attr_1=attr_1"')
    const preview = await browser.post(`/dashboard/templates/${row?.id}/preview`, {
      name: 'Welcome',
      subject: 'Hi {{name}}!',
      text_body: 'Hello {{ name }}, {{attr_1}}',
      html_body: '<p>{{name}}</p>',
      sample: 'name=<Ann>, VIP',
    })
    const text = textOf(preview.html)
    expect(text).toContain('Subject: Hi <Ann>!')
    expect(text).toContain('Hello <Ann>, VIP')
    // Escaped once by the template (the value), once more as the frame's attribute.
    expect(preview.html).toMatch(/srcdoc="&lt;meta [^"]*&gt;&lt;p&gt;&amp;lt;Ann&amp;gt;&lt;\/p&gt;"/)
    const [saved] = await app.services.sql`select subject from templates where id = ${row?.id as number}`
    expect(saved?.subject).toBe('Hi {{name}}')
  })
})
