import { expect, test } from 'bun:test'
import { SCOPES } from '../../src/auth/access'
import { SCOPES as CONSOLE_SCOPES } from '../../src/console/ui/scopes'

test('the console offers exactly the scopes the server knows, in the same order', () => {
  expect([...CONSOLE_SCOPES]).toEqual([...SCOPES])
})
