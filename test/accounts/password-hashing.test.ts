import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { hashPassword, verifyPassword } from '../../src/accounts/passwords.ts'

/** The nice value of each of this process's threads (field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNiceness(): number[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    // The name, in parentheses, may hold spaces: the fields after it are counted from its end.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[16])
  })
}

describe('password hashing', () => {
  it('verifies what it hashed, and nothing else', async () => {
    const stored = await hashPassword('correct horse battery')
    expect(stored).toMatch(/^scrypt\$ln=17,r=8,p=1\$/)
    expect(await verifyPassword('correct horse battery', stored)).toBe(true)
    expect(await verifyPassword('correct horse batterz', stored)).toBe(false)
    expect(await verifyPassword('correct horse battery', null)).toBe(false)
  })

  it.runIf(process.platform === 'linux')(
    'runs on a thread of the lowest CPU priority, so that sign-ins never slow other requests',
    async () => {
      await verifyPassword('any password at all', null)
      expect(threadNiceness().filter((nice) => nice === 19)).toEqual([19])
      // The event loop's own thread keeps its priority.
      expect(threadNiceness()[0]).toBe(0)
    },
  )
})
