import { expect } from 'bun:test'
import { SYSTEM } from '../../../src/audit/events'
import type { Grant } from '../../../src/auth/access'
import type { TestApp } from '../../helpers/app'

export const USER = 'urn:ietf:params:scim:schemas:core:2.0:User'
export const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group'
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'
export const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
export const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse'
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error'

/** Headers an identity provider sends: a key with the scim scope as a bearer token. */
export async function scimKey(t: TestApp, scopes: Grant[] = ['scim']) {
  const { key } = await t.deps.apiKeys.create({ name: 'okta', scopes }, SYSTEM)
  return { authorization: `Bearer ${key}`, 'content-type': 'application/scim+json' }
}

/** Asserts SCIM's error form with this status (and scimType); returns the body. */
export function expectScimError(
  // biome-ignore lint/suspicious/noExplicitAny: a SCIM answer's body is whatever JSON came back.
  reply: { status: number; body: any; headers: Headers },
  status: number,
  scimType?: string,
) {
  expect({
    status: reply.status,
    schemas: reply.body.schemas,
    statusText: reply.body.status,
  }).toEqual({
    status,
    schemas: [ERROR],
    statusText: String(status),
  })
  expect(reply.headers.get('content-type')).toStartWith('application/scim+json')
  if (scimType !== undefined) expect(reply.body.scimType).toBe(scimType)
  expect(typeof reply.body.detail).toBe('string')
  return reply.body
}

/** How many audit events name this target (at most 100: the tests' resources have a few). */
export async function eventCount(t: TestApp, targetType: 'user' | 'group', targetId: string) {
  const page = await t.deps.audit.page({ targetType, targetId }, { limit: 100, before: null })
  return page.data.length
}
