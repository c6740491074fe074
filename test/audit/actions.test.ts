import { describe, expect, test } from 'bun:test'
import { Glob } from 'bun'
import { AUDIT_ACTIONS } from '../../src/audit/events'

describe('the list of audit actions', () => {
  test('is every action the code names, no more and no fewer (webhook subscriptions are checked against it)', async () => {
    const named = new Set<string>()
    for (const file of new Glob('src/**/*.ts').scanSync('.')) {
      if (file.startsWith('src/console/')) continue
      // SCIM's attribute paths (meta.created, name.formatted) look like actions and are not.
      if (file.includes('/scim')) continue
      const text = await Bun.file(file).text()
      // `<target type>.<past tense>` as a string literal.
      for (const match of text.matchAll(/'([a-z_]+\.[a-z_]+ed)'/g)) named.add(match[1] as string)
    }
    // A metric's name, not an action.
    named.delete('roster.observed')
    expect([...named].sort()).toEqual([...AUDIT_ACTIONS].sort())
  })
})
