import { describe, expect, test } from 'bun:test'
import { parseGroupFilter, parseUserFilter } from '../../src/scim/filter'
import { makeTestApp } from '../helpers/app'
import { ENTERPRISE, scimKey, USER } from '../routes/scim/helpers'

// Every example filter of RFC 7644 section 3.4.2.2, parsed, compiled to SQL and run against
// the same users on each database (the PostgreSQL run is scripts/test-postgres.ts's).
const RFC_EXAMPLES: [string, string[]][] = [
  ['userName eq "bjensen"', ['bjensen']],
  [`name.familyName co "O'Malley"`, ['omalley']],
  ['userName sw "J"', ['jsmith']],
  ['urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"', ['jsmith']],
  ['title pr', []],
  ['meta.lastModified gt "2011-05-13T04:42:34Z"', ['bjensen', 'jsmith', 'omalley']],
  ['meta.lastModified ge "2011-05-13T04:42:34Z"', ['bjensen', 'jsmith', 'omalley']],
  ['meta.lastModified lt "2011-05-13T04:42:34Z"', []],
  ['meta.lastModified le "2011-05-13T04:42:34Z"', []],
  ['title pr and userType eq "Employee"', []],
  ['title pr or userType eq "Intern"', []],
  ['schemas eq "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"', ['bjensen']],
  ['userType eq "Employee" and (emails co "example.com" or emails.value co "example.org")', []],
  [
    'userType ne "Employee" and not (emails co "example.com" or emails.value co "example.org")',
    ['omalley'],
  ],
  ['userType eq "Employee" and (emails.type eq "work")', []],
  ['userType eq "Employee" and emails[type eq "work" and value co "@example.com"]', []],
  [
    'emails[type eq "work" and value co "@example.com"] or ims[type eq "xmpp" and value co "@foo.com"]',
    ['bjensen'],
  ],
]

describe('SCIM filters', () => {
  test('every example of RFC 7644 section 3.4.2.2 parses', () => {
    for (const [filter] of RFC_EXAMPLES) expect(() => parseUserFilter(filter)).not.toThrow()
  })

  test('every example of RFC 7644 section 3.4.2.2 finds what it should, in SQL', async () => {
    await using t = await makeTestApp()
    const headers = await scimKey(t)
    const users = [
      {
        userName: 'bjensen',
        emails: [{ value: 'bjensen@example.com', type: 'work' }],
        [ENTERPRISE]: { department: 'Tours' },
      },
      { userName: 'jsmith', emails: [{ value: 'jsmith@example.org', type: 'home' }] },
      {
        userName: 'omalley',
        name: { familyName: "O'Malley" },
        emails: [{ value: 'omalley@corp.test', type: 'other' }],
      },
    ]
    for (const user of users) {
      const made = await t.call('POST', '/scim/v2/Users', {
        json: { schemas: [USER], ...user },
        headers,
      })
      expect(made.status).toBe(201)
    }
    for (const [filter, expected] of RFC_EXAMPLES) {
      const reply = await t.get(`/scim/v2/Users?filter=${encodeURIComponent(filter)}`, { headers })
      const found = reply.body.Resources?.map((user: { userName: string }) => user.userName)
      expect({ filter, found }).toEqual({ filter, found: expected })
    }
  })

  test('attribute names match without regard to case; values of case-exact attributes do not', () => {
    expect(parseUserFilter('USERNAME Eq "A"')).toEqual(parseUserFilter('userName eq "A"'))
    expect(parseUserFilter('externalId eq "X"')).toMatchObject({
      kind: 'compare',
      attribute: { column: 'external_id', caseExact: true },
      value: 'X',
    })
  })

  test('wrong types and unknown names are invalidFilter; null asks for presence', () => {
    for (const filter of [
      'active eq "maybe"',
      'active co true',
      'meta.created sw "2020"',
      'shoeSize eq 4',
      'name.familyName eq 12',
      'userName eq true',
      'emails[value eq 1]',
      'emails[shoe eq "x"]',
      'name[givenName eq "x"]',
    ]) {
      expect(() => parseUserFilter(filter)).toThrow()
    }
    expect(parseUserFilter('externalId eq null')).toMatchObject({
      kind: 'not',
      part: { kind: 'present' },
    })
    expect(parseGroupFilter('members[value eq "12"]')).toMatchObject({ kind: 'anyMember' })
    expect(parseGroupFilter('id eq "abc"')).toEqual({ kind: 'none' })
    expect(() => parseGroupFilter('displayName eq 7')).toThrow()
  })
})
