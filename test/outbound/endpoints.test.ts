import { describe, expect, test } from 'bun:test'
import { AUDIT_ACTIONS } from '../../src/audit/events'
import { eventsProblems, subscribes, urlProblems } from '../../src/outbound/endpoints'

describe('an endpoint’s URL', () => {
  test('http and https URLs with a host are taken', () => {
    for (const url of [
      'https://hooks.example.com/roster',
      'http://hooks.example.com:8080/in?team=a',
      'https://[2606:4700::1111]/x',
    ]) {
      expect(urlProblems(url)).toEqual([])
    }
  })

  const refused: [string, string][] = [
    ['ftp://hooks.example.com/', 'must be an absolute http:// or https:// URL'],
    ['/relative', 'must be an absolute http:// or https:// URL'],
    ['javascript:alert(1)', 'must be an absolute http:// or https:// URL'],
    ['https://user:pass@hooks.example.com/', 'must not carry a user name or password'],
    ['https://hooks.example.com/#frag', 'must not have a #fragment'],
    ['https://hooks.example.com/a b', 'must be a URL without spaces'],
    ['https://hooks.example.com/\u0000', 'must be a URL without spaces'],
    ['https://hooks.example.com/\u202e', 'must be a URL without spaces'],
    [`https://hooks.example.com/${'a'.repeat(2048)}`, 'must be at most 2048 characters'],
  ]
  for (const [url, message] of refused) {
    test(`${JSON.stringify(url.slice(0, 60))} is refused: ${message}`, () => {
      const [problem] = urlProblems(url)
      expect(problem?.field).toBe('url')
      expect(problem?.message).toStartWith(message)
    })
  }
})

describe('what an endpoint subscribes to', () => {
  test('actions, kinds of action and * are patterns; anything else is named by its place', () => {
    expect(eventsProblems(['*', 'user.*', 'group.created', ...AUDIT_ACTIONS])).toEqual([])
    expect(eventsProblems([])).toHaveLength(1)
    expect(eventsProblems(['user.created', 'user.exploded', 'nothing.*', 'user'])).toEqual([
      expect.objectContaining({ field: 'events[1]', received: 'user.exploded' }),
      expect.objectContaining({ field: 'events[2]', received: 'nothing.*' }),
      expect.objectContaining({ field: 'events[3]', received: 'user' }),
    ])
    expect(eventsProblems(Array.from({ length: 65 }, () => '*'))).toHaveLength(1)
  })

  test('an event matches an exact action, its kind, or *', () => {
    expect(subscribes(['user.created'], 'user.created')).toBe(true)
    expect(subscribes(['user.created'], 'user.updated')).toBe(false)
    expect(subscribes(['user.*'], 'user.deleted')).toBe(true)
    expect(subscribes(['user.*'], 'user_x.deleted')).toBe(false)
    expect(subscribes(['group.*', 'login.failed'], 'login.failed')).toBe(true)
    expect(subscribes(['*'], 'webhook_endpoint.disabled')).toBe(true)
  })
})
