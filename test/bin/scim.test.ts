import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir } from '../helpers/app'
import { requireBinary, runBinary, startBinary } from '../helpers/binary'

setDefaultTimeout(30_000)
beforeAll(requireBinary)

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User'
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group'
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
const PASSWORD = 'correct horse battery'

describe('SCIM through the compiled binary', () => {
  test('an identity provider provisions a user and a group; the user signs in; deactivation ends it', async () => {
    using dir = tempDir()
    const data = ['--data-dir', dir.path]
    const made = await runBinary(['keys', 'create', '--name', 'entra', '--scope', 'scim', ...data])
    expect(made.stderr).toContain('scopes scim')
    const key = made.stdout.trim()
    const server = await startBinary([...data, '--users-access', 'protected', '--scim-passwords'])
    try {
      const scim = async (method: string, path: string, json?: unknown) => {
        const response = await fetch(`${server.url}/scim/v2${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/scim+json' },
          body: json === undefined ? undefined : JSON.stringify(json),
        })
        const text = await response.text()
        return {
          status: response.status,
          type: response.headers.get('content-type'),
          body: text === '' ? null : JSON.parse(text),
        }
      }
      const signIn = () =>
        fetch(`${server.url}/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'grace', password: PASSWORD }),
        })
      const config = await scim('GET', '/ServiceProviderConfig')
      expect(config.body.patch.supported).toBe(true)
      const created = await scim('POST', '/Users', {
        schemas: [USER],
        userName: 'grace',
        externalId: 'entra-7',
        emails: [{ value: 'grace@example.com', type: 'work', primary: 'True' }],
        name: { givenName: 'Grace', familyName: 'Hopper' },
        password: PASSWORD,
      })
      expect({ status: created.status, type: created.type }).toEqual({
        status: 201,
        type: 'application/scim+json; charset=utf-8',
      })
      const group = await scim('POST', '/Groups', {
        schemas: [GROUP],
        displayName: 'Navy',
        members: [{ value: created.body.id }],
      })
      expect(group.body.members[0]).toMatchObject({ value: created.body.id, display: 'grace' })
      expect((await signIn()).status).toBe(200)
      const off = await scim('PATCH', `/Users/${created.body.id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      })
      expect(off.body.active).toBe(false)
      expect((await signIn()).status).toBe(403)
      const refused = await fetch(`${server.url}/scim/v2/Users`)
      expect({ status: refused.status, body: await refused.json() }).toMatchObject({
        status: 401,
        body: { status: '401', schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'] },
      })
      expect((await scim('DELETE', `/Users/${created.body.id}`)).status).toBe(204)
      expect((await scim('GET', `/Groups/${group.body.id}`)).body.members).toEqual([])
    } finally {
      await server.stop()
    }
  })
})
