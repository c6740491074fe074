// CONTRACT section 17: `__proto__`, `constructor` and `prototype` are refused (400/422) in
// bodies. A JSON sign-in refuses them (http/json-body.ts); the form and multipart bodies of
// /login are read by another parser, which drops `__proto__` without a word and keeps the
// other two, and signs in.

import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { makeTestApp } from '../../helpers/app'
import { PASSWORD } from '../../helpers/auth'

// Each sign-in that gets through runs argon2id (tens of ms).
setDefaultTimeout(30_000)

const ada = { name: 'Ada', email: 'ada@example.com', password: PASSWORD }

function multipart(fields: [string, string][]) {
  const data = new FormData()
  for (const [name, value] of fields) data.append(name, value)
  return new Response(data)
}

describe('POST /login with a field named after a prototype key', () => {
  for (const name of ['__proto__', 'constructor', 'prototype']) {
    test(`${name}, as a form or multipart, is refused with the envelope and signs nobody in`, async () => {
      await using t = await makeTestApp()
      await t.post('/users', ada)
      const fields: [string, string][] = [
        [name, 'x'],
        ['email', ada.email],
        ['password', PASSWORD],
      ]
      const asForm = new URLSearchParams(fields).toString()
      const asMultipart = multipart(fields)
      // The type (with its boundary) is read before the body: a consumed Response loses it.
      const multipartType = asMultipart.headers.get('content-type') ?? ''
      const bodies: [string, BodyInit, string][] = [
        ['form', asForm, 'application/x-www-form-urlencoded'],
        ['multipart', await asMultipart.arrayBuffer(), multipartType],
      ]
      for (const [kind, body, type] of bodies) {
        const reply = await t.call('POST', '/login', { body, headers: { 'content-type': type } })
        expect({ kind, status: reply.status }).toEqual({
          kind,
          status: reply.status === 400 ? 400 : 422,
        })
        expect(reply.body.error?.code).toMatch(/^(BAD_REQUEST|VALIDATION_ERROR)$/)
        expect(reply.headers.get('set-cookie')).toBeNull()
      }
    })
  }
})
