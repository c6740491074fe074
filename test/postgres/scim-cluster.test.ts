import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { runBinary } from '../helpers/binary'
import { startCluster } from '../helpers/cluster'

// SCIM on two instances of the compiled binary sharing PostgreSQL (CONTRACT section 13): an
// identity provider's retries land on either instance, and each write must hold.

setDefaultTimeout(90_000)

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User'
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'

async function scim(base: string, key: string, method: string, path: string, json?: unknown) {
  const response = await fetch(`${base}/scim/v2${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/scim+json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  })
  const text = await response.text()
  return { status: response.status, body: text === '' ? null : JSON.parse(text) }
}

async function withScimCluster() {
  const cluster = await startCluster({ flags: ['--scim-passwords'] })
  const made = await runBinary(
    ['keys', 'create', '--name', 'okta', '--scope', 'scim', ...cluster.cliFlags],
    {
      env: cluster.env,
    },
  )
  expect(made.code).toBe(0)
  const [a, b] = cluster.instances.map((instance) => instance.url) as [string, string]
  return { cluster, key: made.stdout.trim(), a, b }
}

describe('SCIM on two instances sharing PostgreSQL', () => {
  test('a userName race across both instances creates one user and answers the rest 409 uniqueness', async () => {
    const { cluster, key, a, b } = await withScimCluster()
    await using _ = cluster
    const body = { schemas: [USER], userName: 'race@example.com', externalId: 'okta-1' }
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => scim(i % 2 === 0 ? a : b, key, 'POST', '/Users', body)),
    )
    const statuses = replies.map((reply) => reply.status).sort()
    expect(statuses.filter((status) => status === 201)).toHaveLength(1)
    expect(statuses.filter((status) => status === 409)).toHaveLength(19)
    for (const refused of replies.filter((reply) => reply.status === 409)) {
      expect(refused.body).toMatchObject({ status: '409', scimType: 'uniqueness' })
    }
    const listed = await scim(b, key, 'GET', '/Users?filter=userName%20eq%20%22RACE@example.com%22')
    expect(listed.body.totalResults).toBe(1)
  })

  test('a PATCH on one instance and a deactivation on the other both hold; sign-in ends on both', async () => {
    const { cluster, key, a, b } = await withScimCluster()
    await using _ = cluster
    const created = await scim(a, key, 'POST', '/Users', {
      schemas: [USER],
      userName: 'ada@example.com',
      password: 'correct horse battery',
    })
    const id = created.body.id
    const login = await fetch(`${b}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ada@example.com', password: 'correct horse battery' }),
    })
    const token = (await login.json()).access_token
    const [patched, deactivated] = await Promise.all([
      scim(a, key, 'PATCH', `/Users/${id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'add', path: `${ENTERPRISE}:department`, value: 'Research' }],
      }),
      scim(b, key, 'PATCH', `/Users/${id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'replace', value: { active: 'False' } }],
      }),
    ])
    expect([patched.status, deactivated.status]).toEqual([200, 200])
    for (const base of [a, b]) {
      const read = await scim(base, key, 'GET', `/Users/${id}`)
      expect({ active: read.body.active, department: read.body[ENTERPRISE]?.department }).toEqual({
        active: false,
        department: 'Research',
      })
      const me = await fetch(`${base}/me`, { headers: { authorization: `Bearer ${token}` } })
      expect(me.status).toBe(401)
    }
  })
})
