import { describe, expect, test } from 'bun:test'
import { SYSTEM } from '../../src/audit/events'
import { needsRehash } from '../../src/auth/passwords'
import { dbQuery, makeTestApp } from '../helpers/app'
import { form } from '../helpers/auth'

const PASSWORD = 'an imported passphrase'

async function storedHash(t: Awaited<ReturnType<typeof makeTestApp>>): Promise<string> {
  const [row] = await dbQuery<{ h: string }>(t.deps, 'SELECT password_hash AS h FROM users')
  return row?.h ?? ''
}

describe('hashes weaker than roster’s own are replaced at the next sign-in', () => {
  test('which hashes count as weaker', async () => {
    expect(needsRehash(await Bun.password.hash('x', { algorithm: 'argon2id' }))).toBe(false)
    const weak = await Bun.password.hash('x', {
      algorithm: 'argon2id',
      memoryCost: 4096,
      timeCost: 1,
    })
    expect(needsRehash(weak)).toBe(true)
    expect(needsRehash(await Bun.password.hash('x', { algorithm: 'argon2i' }))).toBe(true)
    expect(needsRehash(await Bun.password.hash('x', { algorithm: 'bcrypt', cost: 4 }))).toBe(true)
  })

  for (const [kind, make] of [
    [
      'a cheap argon2id',
      () => Bun.password.hash(PASSWORD, { algorithm: 'argon2id', memoryCost: 4096, timeCost: 1 }),
    ],
    ['bcrypt', () => Bun.password.hash(PASSWORD, { algorithm: 'bcrypt', cost: 4 })],
  ] as const) {
    test(`${kind}: the sign-in works, then the stored hash is roster’s argon2id; sessions stay`, async () => {
      await using t = await makeTestApp()
      await t.deps.users.create(
        {
          name: 'Imp',
          email: 'imp@example.com',
          passwordHash: await make(),
        },
        SYSTEM,
      )
      const first = await t.call(
        'POST',
        '/login',
        form({ email: 'imp@example.com', password: PASSWORD }),
      )
      expect(first.status).toBe(200)
      const deadline = Date.now() + 5000
      while (needsRehash(await storedHash(t)) && Date.now() < deadline) await Bun.sleep(20)
      const hash = await storedHash(t)
      expect(hash).toStartWith('$argon2id$v=19$m=65536,t=2,')
      expect(await Bun.password.verify(PASSWORD, hash)).toBe(true)
      // Not a password change: the session from the first sign-in still works.
      const me = await t.get('/me', {
        headers: { authorization: `Bearer ${first.body.access_token}` },
      })
      expect(me.status).toBe(200)
      expect((await t.get('/users/1')).headers.get('etag')).toBe('"1.1"')
    })
  }
})
