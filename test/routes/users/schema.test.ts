import { describe, expect, test } from 'bun:test'
import { FormatRegistry } from '@sinclair/typebox'
import { isValidEmail } from '../../../src/users/fields'
import { makeTestApp } from '../../helpers/app'

describe('the email format', () => {
  test('is roster’s own check once the app is built, whatever @elysiajs/openapi registered', async () => {
    await import('@elysiajs/openapi')
    await using _t = await makeTestApp()
    expect(FormatRegistry.Get('email')).toBe(isValidEmail)
  })

  test('accepts addresses with a dotted domain, refuses the rest', () => {
    for (const email of [
      'ada@example.com',
      "o'brien+tag@mail.example.co.uk",
      'a@b.io',
      'A@EXAMPLE.COM',
    ]) {
      expect({ email, valid: isValidEmail(email) }).toEqual({ email, valid: true })
    }
    for (const email of [
      'plain',
      'a@b',
      '@example.com',
      'a@-x.com',
      'a b@example.com',
      'zoë@example.com',
      'a@example.com\n',
    ]) {
      expect({ email, valid: isValidEmail(email) }).toEqual({ email, valid: false })
    }
  })
})
