import { describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { expectEnvelope, makeTestApp, sqlitePath, uploadDirOf } from '../helpers/app'
import { apiKey } from '../helpers/auth'
import { dropDatabase } from '../helpers/postgres'

describe('GET /health', () => {
  test('200 with version, uptime and checks', async () => {
    await using t = await makeTestApp()
    const reply = await t.get('/health')
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      status: 'ok',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      uptime_s: expect.any(Number),
      checks: { database: 'ok', storage: 'ok', disk: 'ok' },
      disk_free_bytes: expect.any(Number),
    })
    expect(reply.body.disk_free_bytes).toBeGreaterThan(0)
  })

  test('HEAD answers the same status with no body', async () => {
    await using t = await makeTestApp()
    const reply = await t.call('HEAD', '/health')
    expect(reply.status).toBe(200)
    expect(reply.text).toBe('')
  })

  // The upload folder's failures (a bucket that stops answering: test/postgres/s3-outage.test.ts).
  test('503 unavailable when the upload directory is gone; ready and live stay 200', async () => {
    await using t = await makeTestApp({ storage: null })
    rmSync(uploadDirOf(t.deps), { recursive: true })
    const reply = await t.get('/health')
    expectEnvelope(reply, 503, 'SERVICE_UNAVAILABLE')
    expect(reply.body).toMatchObject({
      status: 'unavailable',
      checks: { database: 'ok', storage: 'failing' },
    })
    const ready = await t.get('/health/ready')
    expect({ status: ready.status, body: ready.body }).toEqual({
      status: 200,
      body: { status: 'ok', checks: { database: 'ok' } },
    })
    expect((await t.get('/health/live')).body).toEqual({ status: 'ok' })
  })

  test('503 unavailable when the database goes away under it (file deleted, database dropped)', async () => {
    await using t = await makeTestApp()
    if (t.config.databaseUrl === null) rmSync(sqlitePath(t.deps))
    else await dropDatabase(t.config.databaseUrl)
    const reply = await t.get('/v2/health')
    expectEnvelope(reply, 503, 'SERVICE_UNAVAILABLE')
    expect(reply.body).toMatchObject({
      status: 'unavailable',
      checks: { database: 'failing', storage: 'ok' },
    })
    // Ready follows the database (a balancer takes the instance out); live does not.
    const ready = await t.get('/health/ready')
    expectEnvelope(ready, 503, 'SERVICE_UNAVAILABLE')
    expect(ready.body).toMatchObject({ status: 'unavailable', checks: { database: 'failing' } })
    expect((await t.get('/health/live')).status).toBe(200)
  })
})

describe('health check caching', () => {
  test('checks run at most once a second; a failure shows on the next run', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z')
    await using t = await makeTestApp({ storage: null }, () => new Date(clock))
    expect((await t.get('/health')).status).toBe(200)
    rmSync(uploadDirOf(t.deps), { recursive: true })
    clock += 500
    expect((await t.get('/health')).body).toMatchObject({ status: 'ok', uptime_s: 0 })
    clock += 600
    const reply = await t.get('/health')
    expect(reply.status).toBe(503)
    expect(reply.body).toMatchObject({ uptime_s: 1, checks: { storage: 'failing' } })
  })
})

describe('/metrics and /health in protected mode (section 11)', () => {
  test('/metrics needs an API key, as X-API-Key or as a bearer token (Prometheus)', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const key = await apiKey(t)
    const anonymous = await t.get('/metrics')
    expectEnvelope(anonymous, 401, 'UNAUTHORIZED')
    expect(anonymous.headers.get('www-authenticate')).toStartWith('ApiKey')
    const ways: Record<string, string>[] = [
      { 'x-api-key': key },
      { authorization: `Bearer ${key}` },
    ]
    for (const headers of ways) {
      const reply = await t.get('/metrics', { headers })
      expect(reply.status).toBe(200)
      expect(reply.text).toContain('roster_http_requests_total')
    }
    expectEnvelope(
      await t.get('/metrics', { headers: { authorization: 'Bearer rk_revoked_or_wrong' } }),
      401,
      'UNAUTHORIZED',
    )
  })

  test('/health shows status, version, uptime and the checks to anyone; figures only with a key', async () => {
    await using t = await makeTestApp({ usersAccess: 'protected' })
    const key = await apiKey(t)
    const anonymous = await t.get('/health')
    expect(anonymous.status).toBe(200)
    expect(Object.keys(anonymous.body).sort()).toEqual(['checks', 'status', 'uptime_s', 'version'])
    const withKey = await t.get('/health', { headers: { authorization: `Bearer ${key}` } })
    expect(withKey.body).toHaveProperty('disk_free_bytes')
  })

  test('open mode: /metrics and the figures are anyone’s', async () => {
    await using t = await makeTestApp({ usersAccess: 'open' })
    expect((await t.get('/metrics')).status).toBe(200)
    expect((await t.get('/health')).body).toHaveProperty('disk_free_bytes')
  })
})
