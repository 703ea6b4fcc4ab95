import { addresses, type Bench, type Scenario } from '../support.ts'

const MEMBERS = 10_000

/** POST /audiences/{id}/members with 10000 members in one request (no email is sent). */
export const audienceImport: Scenario = {
  name: 'audience-import',
  async run(bench: Bench) {
    const { audience } = (await bench.post('/audiences', { name: 'Bench import' })) as {
      audience: { id: number }
    }
    const members = addresses(MEMBERS, 'member').map((email, i) => ({
      email,
      payload: { first_name: `M${i}` },
    }))
    const figures = await bench.timed(`audience import ×${MEMBERS} members`, MEMBERS, async () => {
      await bench.post(`/audiences/${audience.id}/members`, { members })
    })
    return [figures]
  },
}
