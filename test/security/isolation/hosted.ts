import { LATE, NOT_PUBLIC, OWN, type Probe, probe } from './probes.ts'

/** The other account's token with one of its parts changed: a link nobody was sent. */
function forged(token: string): string {
  const [audience, member, signature = ''] = token.split('.')
  return `${audience}.${Number(member) + 1}.${signature}`
}

export const HOSTED: Record<string, Probe[]> = {
  'GET /hosted/pico.css': [probe(OWN)],
  'GET /signup/:slug': [
    probe(NOT_PUBLIC, (t) => ({ slug: t.closedSlug }), { control: (t) => ({ params: { slug: t.slug } }) }),
  ],
  'POST /signup/:slug': [
    probe(NOT_PUBLIC, (t) => ({ slug: t.closedSlug }), {
      body: () => ({ email: 'stranger@example.com' }),
      control: (t) => ({ params: { slug: t.slug }, body: { email: 'stranger@example.com' } }),
    }),
  ],
  'GET /signup/confirm/:token': [probe(NOT_PUBLIC, () => ({ token: 'a'.repeat(43) }), { control: false })],
  'POST /signup/confirm/:token': [probe(NOT_PUBLIC, () => ({ token: 'a'.repeat(43) }), { control: false })],
  'OPTIONS /forms/:id': [probe(OWN, (t) => ({ id: t.formPublicId }))],
  // The database ID is not the public address.
  'GET /forms/:id': [
    probe(NOT_PUBLIC, (t) => ({ id: t.formId }), { control: (t) => ({ params: { id: t.formPublicId } }) }),
  ],
  'POST /forms/:id': [
    probe(NOT_PUBLIC, (t) => ({ id: t.formId }), {
      body: () => ({ message: 'hello' }),
      control: (t) => ({ params: { id: t.formPublicId }, body: { message: 'hello' } }),
    }),
  ],
  'GET /unsubscribe/:token': [
    probe(NOT_PUBLIC, (t) => ({ token: forged(t.unsubscribeToken) }), {
      control: (t) => ({ params: { token: t.unsubscribeToken } }),
    }),
  ],
  'POST /unsubscribe/:token': [
    probe(NOT_PUBLIC, (t) => ({ token: forged(t.unsubscribeToken) }), {
      phase: LATE,
      control: (t) => ({ params: { token: t.unsubscribeToken } }),
    }),
  ],
}

// --- The walk -------------------------------------------------------------------------------------
