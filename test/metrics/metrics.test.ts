import { describe, expect, test } from 'bun:test'
import { createMetrics } from '../../src/metrics/metrics'
import { Counter, Registry } from '../../src/metrics/registry'
import { expectEnvelope, makeTestApp, type TestApp } from '../helpers/app'
import { multipartBody, multipartType } from '../helpers/multipart'
import { event, STRIPE_SECRET, stripeHeaders } from '../helpers/webhooks'

interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/**
 * A strict parser for the Prometheus text format 0.0.4: every line is a comment (# HELP,
 * # TYPE) or a sample `name{label="value",...} number`, every sample belongs to a family
 * declared by # TYPE, and no series appears twice.
 */
function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  expect(text.endsWith('\n')).toBe(true)
  const types = new Map<string, string>()
  const samples: Sample[] = []
  const seen = new Set<string>()
  for (const line of text.slice(0, -1).split('\n')) {
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line)
    if (comment) {
      if (comment[1] === 'TYPE') {
        expect(['counter', 'gauge', 'histogram']).toContain(comment[3] as string)
        expect(types.has(comment[2] as string)).toBe(false)
        types.set(comment[2] as string, comment[3] as string)
      }
      continue
    }
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.e+-]+|\+Inf|NaN)$/.exec(line)
    expect({ line, parsed: match !== null }).toEqual({ line, parsed: true })
    const [, name, , labelText = ''] = match as RegExpExecArray
    const labels: Record<string, string> = {}
    const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/gy
    let consumed = 0
    for (const label of labelText.matchAll(labelPattern)) {
      labels[label[1] as string] = (label[2] as string).replace(/\\(.)/g, (_, c) =>
        c === 'n' ? '\n' : c,
      )
      consumed += label[0].length
    }
    expect(consumed).toBe(labelText.length)
    const family = (name as string).replace(/_(bucket|sum|count)$/, '')
    expect({ name, declared: types.has(name as string) || types.has(family) }).toEqual({
      name,
      declared: true,
    })
    const series = `${name}${JSON.stringify(labels)}`
    expect(seen.has(series)).toBe(false)
    seen.add(series)
    samples.push({ name: name as string, labels, value: Number(match?.[4]) })
  }
  return { samples, types }
}

const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )

async function scrape(t: TestApp) {
  const reply = await t.get('/metrics')
  expect(reply.status).toBe(200)
  expect(reply.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  return parseExposition(reply.text)
}

describe('GET /metrics', () => {
  test('is Prometheus text that parses, with the contract’s names and labels', async () => {
    await using t = await makeTestApp({ webhookSecrets: [STRIPE_SECRET] })
    const created = await t.post('/users', { name: 'Ada', email: 'ada@example.com' })
    for (const id of [created.body.id, 999, 12345]) await t.get(`/users/${id}`)
    await t.get('/v2/users?limit=5')
    await t.call('PATCH', '/users')
    await t.get('/no/such/path/42')
    const { samples, types } = await scrape(t)

    expect(types.get('roster_http_requests_total')).toBe('counter')
    expect(types.get('roster_http_request_duration_seconds')).toBe('histogram')
    for (const name of [
      'roster_uploads_total',
      'roster_upload_bytes_total',
      'roster_webhook_events_total',
      'process_cpu_seconds_total',
    ]) {
      expect(types.get(name)).toBe('counter')
    }
    for (const name of [
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'process_open_fds',
      'roster_users',
    ]) {
      expect(types.get(name)).toBe('gauge')
    }
    const requests = (labels: Record<string, string>) =>
      find(samples, 'roster_http_requests_total', labels)[0]?.value
    expect(requests({ method: 'POST', route: '/users', status: '201' })).toBe(1)
    expect(requests({ method: 'GET', route: '/users/:id', status: '200' })).toBe(1)
    expect(requests({ method: 'GET', route: '/users/:id', status: '404' })).toBe(2)
    expect(requests({ method: 'GET', route: '/v2/users', status: '200' })).toBe(1)
    expect(requests({ method: 'PATCH', route: '/users', status: '405' })).toBe(1)
    expect(requests({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1)
    // Ids and unknown paths never become labels.
    const routes = new Set(find(samples, 'roster_http_requests_total').map((s) => s.labels.route))
    for (const route of routes) expect(route).not.toMatch(/[0-9]{2,}|no\/such/)

    const buckets = find(samples, 'roster_http_request_duration_seconds_bucket', {
      route: '/users/:id',
    })
    expect(buckets.at(-1)?.labels.le).toBe('+Inf')
    expect(buckets.at(-1)?.value).toBe(3)
    for (let i = 1; i < buckets.length; i++) {
      expect(buckets[i]?.value).toBeGreaterThanOrEqual(buckets[i - 1]?.value as number)
    }
    expect(
      find(samples, 'roster_http_request_duration_seconds_count', { route: '/users/:id' })[0]
        ?.value,
    ).toBe(3)
    expect(find(samples, 'roster_users')[0]?.value).toBe(1)
    expect(find(samples, 'process_resident_memory_bytes')[0]?.value).toBeGreaterThan(1e6)
    expect(find(samples, 'roster_build_info')[0]?.labels.version).toMatch(/^\d+\.\d+\.\d+/)
  })

  test('counts uploads with their files and bytes', async () => {
    await using t = await makeTestApp()
    await t.call('POST', '/upload', {
      body: multipartBody([
        { name: 'a', filename: 'a.txt', data: 'hello' },
        { name: 'b', filename: 'b.txt', data: 'world!' },
      ]),
      headers: { 'content-type': multipartType() },
    })
    await t.call('POST', '/upload', { body: 'x', headers: { 'content-type': 'text/plain' } })
    const { samples } = await scrape(t)
    expect(find(samples, 'roster_uploads_total')[0]?.value).toBe(1)
    expect(find(samples, 'roster_upload_files_total')[0]?.value).toBe(2)
    expect(find(samples, 'roster_upload_bytes_total')[0]?.value).toBe(11)
  })

  test('counts webhook events by scheme and what became of them', async () => {
    await using t = await makeTestApp({ webhookSecrets: [STRIPE_SECRET] })
    const body = event('customer.created', { email: 'hook@example.com' })
    const deliver = async (headers: Record<string, string>) =>
      t.call('POST', '/webhooks', {
        body,
        headers: { 'content-type': 'application/json', ...headers },
      })
    await deliver(await stripeHeaders(body))
    await deliver(await stripeHeaders(body))
    expectEnvelope(await deliver({ 'stripe-signature': 't=1,v1=00' }), 400, 'INVALID_SIGNATURE')
    expectEnvelope(await deliver({}), 400, 'INVALID_SIGNATURE')
    await t.deps.webhooks.worker.settled()
    const { samples } = await scrape(t)
    const events = (scheme: string, status: string) =>
      find(samples, 'roster_webhook_events_total', { scheme, status })[0]?.value
    expect(events('stripe', 'received')).toBe(1)
    expect(events('stripe', 'duplicate')).toBe(1)
    expect(events('stripe', 'rejected')).toBe(1)
    expect(events('none', 'rejected')).toBe(1)
    expect(events('stripe', 'processed')).toBe(1)
    expect(find(samples, 'roster_webhook_events_pending')[0]?.value).toBe(0)
  })

  test('is unversioned only, and HEAD answers without a body', async () => {
    await using t = await makeTestApp()
    expect((await t.get('/v1/metrics')).status).toBe(404)
    expect((await t.get('/v2/metrics')).status).toBe(404)
    const head = await t.call('HEAD', '/metrics')
    expect(head.status).toBe(200)
    expect(head.text).toBe('')
  })
})

describe('the registry', () => {
  test('escapes label values: counters, and the route label of the duration histogram', async () => {
    const registry = new Registry()
    const counter = registry.add(new Counter('c_total', 'A counter.', ['name']))
    counter.inc({ name: 'quote " backslash \\ newline \n' }, 2)
    expect(find(parseExposition(await registry.render()).samples, 'c_total')[0]?.labels.name).toBe(
      'quote " backslash \\ newline \n',
    )
    const metrics = createMetrics('test')
    metrics.http.record('GET', '/odd "route" \\', 200, 0.05)
    metrics.http.record('GET', '/odd "route" \\', 200, 0.5)
    metrics.http.record('GET', '/odd "route" \\', 200, 50)
    const { samples } = parseExposition(await metrics.render())
    const buckets = find(samples, 'roster_http_request_duration_seconds_bucket', {
      route: '/odd "route" \\',
    })
    expect(
      buckets
        .map((s) => [s.labels.le, s.value])
        .filter(([le]) => ['0.05', '0.5', '10', '+Inf'].includes(le as string)),
    ).toEqual([
      ['0.05', 1],
      ['0.5', 2],
      ['10', 2],
      ['+Inf', 3],
    ])
  })
})
