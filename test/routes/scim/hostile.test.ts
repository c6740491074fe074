import { describe, expect, test } from 'bun:test'
import { makeTestApp } from '../../helpers/app'
import { GROUP, PATCH, scimKey, USER } from './helpers'

// Generated SCIM requests (seeded; ROSTER_HOSTILE_SEED replays one): PatchOps, bodies and list
// parameters of every wrong type. Every answer is below 500, and every refusal in SCIM's form.
const SEED = Number(process.env.ROSTER_HOSTILE_SEED ?? Date.now() % 1_000_000)
function prng(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const random = prng(SEED)

const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)] as T
const junk = (): unknown =>
  pick<unknown>([
    null,
    true,
    'True',
    0,
    -1,
    Number.MAX_VALUE * 2,
    'x',
    '',
    '\u0000',
    '\u202e',
    'a'.repeat(3000),
    [],
    [{}],
    {},
    { value: 'x' },
    { value: '1' },
    [{ value: '1' }],
    [{ value: 'a@b.co', primary: 'yes' }],
    { a: { b: { c: 1 } } },
  ])
const paths = [
  '__proto__.optional',
  'constructor.prototype.optional',
  'emails[__proto__ eq "x"].value',
  'userName',
  'active',
  'emails',
  'emails[type eq "work"].value',
  'emails[value eq 1]',
  'name.givenName',
  'name',
  'members',
  'members[value eq "1"]',
  'displayName',
  'id',
  'meta.version',
  'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager',
  'x[',
  'emails[',
  '',
  'groups',
  'password',
  'externalId',
  '"]',
]
const filters = [
  'userName eq',
  'emails[type eq "work"',
  'not',
  '()',
  'a eq "b" and',
  'userName eq "x" or (active eq true and emails.value co "@")',
  'members[value eq "abc"]',
  'meta.created gt 5',
  'id gt "1"',
  'id eq 1',
  'displayName co ""',
  'emails[primary eq "True"]',
  'userName eq "\\u0000"',
  'x'.repeat(2049),
  'schemas eq 1',
  'active pr',
  'emails pr',
]

describe('hostile SCIM requests, generated', () => {
  test(`1500 PatchOps, bodies and list parameters of every wrong type: no 5xx, refusals in SCIM's form (seed ${SEED})`, async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const user = await t.call('POST', '/scim/v2/Users', {
      json: { schemas: [USER], userName: 'a@example.com' },
      headers,
    })
    const group = await t.call('POST', '/scim/v2/Groups', {
      json: { schemas: [GROUP], displayName: 'G', members: [{ value: user.body.id }] },
      headers,
    })
    const bad: string[] = []
    for (let i = 0; i < 1500; i++) {
      const kind = pick(['userPatch', 'groupPatch', 'userPost', 'groupPut', 'list', 'search'])
      let reply: Awaited<ReturnType<typeof t.get>>
      if (kind === 'userPatch' || kind === 'groupPatch') {
        const ops = Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
          const op: Record<string, unknown> = {
            op: pick(['add', 'remove', 'replace', 'Replace', 'x']),
          }
          if (random() < 0.8) op.path = pick(paths)
          if (random() < 0.8) op.value = random() < 0.3 ? { [pick(paths)]: junk() } : junk()
          return op
        })
        const url =
          kind === 'userPatch'
            ? `/scim/v2/Users/${user.body.id}`
            : `/scim/v2/Groups/${group.body.id}`
        reply = await t.call('PATCH', url, { json: { schemas: [PATCH], Operations: ops }, headers })
      } else if (kind === 'userPost') {
        const body: Record<string, unknown> = {
          schemas: [USER],
          userName: pick(['b@example.com', junk()]),
        }
        for (const p of [
          'emails',
          'name',
          'active',
          'externalId',
          'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
          'displayName',
          'password',
        ])
          if (random() < 0.4) body[p] = junk()
        reply = await t.call('POST', '/scim/v2/Users', { json: body, headers })
        if (reply.status === 201)
          await t.call('DELETE', `/scim/v2/Users/${reply.body.id}`, { headers })
      } else if (kind === 'groupPut') {
        reply = await t.call('PUT', `/scim/v2/Groups/${group.body.id}`, {
          json: { schemas: [GROUP], displayName: pick(['G', junk()]), members: junk() },
          headers,
        })
      } else if (kind === 'list') {
        const q = `filter=${encodeURIComponent(pick(filters))}&startIndex=${encodeURIComponent(String(junk()))}&count=${encodeURIComponent(String(junk()))}&sortBy=${encodeURIComponent(pick(paths))}&attributes=${encodeURIComponent(pick(paths))}`
        reply = await t.get(`/scim/v2/${pick(['Users', 'Groups', 'users'])}?${q}`, { headers })
      } else {
        reply = await t.call('POST', `/scim/v2/${pick(['Users', 'Groups'])}/.search`, {
          json: {
            filter: pick(filters),
            startIndex: junk(),
            count: junk(),
            attributes: junk(),
            sortBy: junk(),
          },
          headers,
        })
      }
      const refusalForm =
        reply.status < 400 ||
        (reply.body?.schemas?.[0] === 'urn:ietf:params:scim:api:messages:2.0:Error' &&
          reply.body.status === String(reply.status))
      if (reply.status >= 500 || !refusalForm) {
        bad.push(`${kind} ${reply.status} ${reply.text?.slice(0, 200)}`)
      }
    }
    if (bad.length > 0)
      console.log(
        t.log.lines
          .filter((l: string) => l.includes('"error"'))
          .slice(0, 3)
          .join('\n'),
      )
    expect(bad.slice(0, 5)).toEqual([])
  }, 240_000)
})
