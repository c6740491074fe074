import { describe, expect, test } from 'bun:test'
import { resolve } from 'node:path'
import { ConfigError, loadConfig } from '../src/config'

describe('loadConfig', () => {
  test('defaults', () => {
    expect(loadConfig({}, {})).toEqual({
      host: '127.0.0.1',
      port: 8080,
      dataDir: resolve('data'),
      databaseUrl: null,
      databasePrepare: true,
      storage: null,
      storageTimeout: 30_000,
      publicUrl: null,
      logFile: null,
      sync: 'full',
      corsOrigins: '*',
      webauthnOrigins: [],
      usersAccess: 'open',
      cookieSecure: false,
      trustProxy: null,
      maxFileSize: 100 * 1024 * 1024,
      maxFiles: 20,
      maxUploadSize: 1024 * 1024 * 1024,
      maxEventStreams: 1000,
      maxEventStreamsPerCredential: 10,
      rateLimit: null,
      webhookRetention: 90 * 24 * 60 * 60 * 1000,
      auditRetention: 90 * 24 * 60 * 60 * 1000,
      webhookAllowPrivate: false,
      webhookRetryWindow: 3 * 24 * 60 * 60 * 1000,
      webhookSecrets: [],
      smtpUrl: null,
      smtpTimeout: 45_000,
      mailFrom: 'roster <no-reply@localhost>',
      mailTemplates: null,
      requireVerifiedEmail: false,
      scimPasswords: false,
    })
  })

  test('/users is open by default only on a loopback address (section 11)', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', 'localhost', '::1']) {
      expect(loadConfig({ host }, {}).usersAccess).toBe('open')
    }
    for (const host of ['0.0.0.0', '::', '192.168.1.20', 'roster.internal']) {
      expect(loadConfig({ host }, {}).usersAccess).toBe('protected')
      expect(loadConfig({}, { ROSTER_HOST: host }).usersAccess).toBe('protected')
    }
    // Open elsewhere only when asked for by name.
    expect(loadConfig({ host: '0.0.0.0', 'users-access': 'open' }, {}).usersAccess).toBe('open')
    expect(loadConfig({ host: '0.0.0.0' }, { ROSTER_USERS_ACCESS: 'open' }).usersAccess).toBe(
      'open',
    )
    expect(loadConfig({}, { ROSTER_USERS_ACCESS: 'protected' }).usersAccess).toBe('protected')
  })

  test('flags beat env vars beat defaults; ROSTER_PORT beats PORT', () => {
    expect(loadConfig({}, { PORT: '3000' }).port).toBe(3000)
    expect(loadConfig({}, { PORT: '3000', ROSTER_PORT: '4000' }).port).toBe(4000)
    expect(loadConfig({ port: '5000' }, { PORT: '3000', ROSTER_PORT: '4000' }).port).toBe(5000)
    expect(loadConfig({}, { ROSTER_DATA_DIR: '/srv/roster' }).dataDir).toBe('/srv/roster')
    expect(loadConfig({ 'data-dir': 'rel' }, { ROSTER_DATA_DIR: '/srv' }).dataDir).toBe(
      resolve('rel'),
    )
    expect(loadConfig({}, { ROSTER_SYNC: 'NORMAL' }).sync).toBe('normal')
    expect(loadConfig({}, { ROSTER_HOST: '' }).host).toBe('127.0.0.1')
  })

  test('CORS origins: a list of origins, or *', () => {
    expect(
      loadConfig({ 'cors-origins': 'https://a.example.com, http://localhost:5173' }, {})
        .corsOrigins,
    ).toEqual(['https://a.example.com', 'http://localhost:5173'])
    expect(loadConfig({}, { ROSTER_CORS_ORIGINS: '*' }).corsOrigins).toBe('*')
  })

  test('boolean options: a flag without a value, or true/false in the environment', () => {
    expect(loadConfig({ 'cookie-secure': true }, {}).cookieSecure).toBe(true)
    expect(loadConfig({}, { ROSTER_COOKIE_SECURE: 'yes' }).cookieSecure).toBe(true)
    expect(loadConfig({}, { ROSTER_TRUST_PROXY: '0' }).trustProxy).toBe(null)
    expect(loadConfig({}, { ROSTER_USERS_ACCESS: 'Protected' }).usersAccess).toBe('protected')
  })

  test('--trust-proxy: alone one hop, a number of hops, or proxy addresses and ranges', () => {
    expect(loadConfig({ 'trust-proxy': 'true' }, {}).trustProxy).toEqual({ hops: 1 })
    expect(loadConfig({}, { ROSTER_TRUST_PROXY: 'true' }).trustProxy).toEqual({ hops: 1 })
    expect(loadConfig({ 'trust-proxy': '2' }, {}).trustProxy).toEqual({ hops: 2 })
    expect(loadConfig({}, { ROSTER_TRUST_PROXY: 'off' }).trustProxy).toBe(null)
    expect(loadConfig({ 'trust-proxy': '10.0.0.0/8, 192.0.2.7,fd00::/8' }, {}).trustProxy).toEqual({
      proxies: ['10.0.0.0/8', '192.0.2.7', 'fd00::/8'],
    })
    for (const bad of ['10.0.0.0/33', 'proxy.internal', '10.0.0.1/8/2', '0x10', '99']) {
      expect(() => loadConfig({ 'trust-proxy': bad }, {})).toThrow(/--trust-proxy/)
    }
  })

  test('sizes: bytes, or KiB/MiB/GiB in any case', () => {
    expect(loadConfig({ 'max-file-size': '1048576' }, {}).maxFileSize).toBe(1048576)
    expect(loadConfig({ 'max-file-size': '512KiB' }, {}).maxFileSize).toBe(512 * 1024)
    expect(loadConfig({}, { ROSTER_MAX_UPLOAD_SIZE: '2 gib' }).maxUploadSize).toBe(2 * 1024 ** 3)
    expect(loadConfig({ 'max-files': '3' }, {}).maxFiles).toBe(3)
  })

  test('the storage timeout: seconds or minutes, at least one second', () => {
    expect(loadConfig({ 'storage-timeout': '5s' }, {}).storageTimeout).toBe(5000)
    expect(loadConfig({}, { ROSTER_STORAGE_TIMEOUT: '2m' }).storageTimeout).toBe(120_000)
  })

  test('webhook secrets: ROSTER_WEBHOOK_SECRET, comma-separated, blanks dropped', () => {
    expect(
      loadConfig({}, { ROSTER_WEBHOOK_SECRET: ' whsec_a , old-secret,,' }).webhookSecrets,
    ).toEqual(['whsec_a', 'old-secret'])
  })

  test('rate limit: N/s, or off', () => {
    expect(loadConfig({ 'rate-limit': '50/s' }, {}).rateLimit).toBe(50)
    expect(loadConfig({}, { ROSTER_RATE_LIMIT: '5/s' }).rateLimit).toBe(5)
    expect(loadConfig({ 'rate-limit': 'off' }, { ROSTER_RATE_LIMIT: '5/s' }).rateLimit).toBe(null)
  })

  test('SMTP timeout: seconds or minutes, at least a second', () => {
    expect(loadConfig({ 'smtp-timeout': '2s' }, {}).smtpTimeout).toBe(2000)
    expect(loadConfig({}, { ROSTER_SMTP_TIMEOUT: '2m' }).smtpTimeout).toBe(120_000)
  })

  test('public URL keeps a path and drops the trailing slash', () => {
    expect(loadConfig({ 'public-url': 'https://x.example.com/api/' }, {}).publicUrl).toBe(
      'https://x.example.com/api',
    )
  })

  test.each([
    [{ port: 'abc' }, {}, '--port'],
    [{ port: '65536' }, {}, '--port'],
    [{ port: '-1' }, {}, '--port'],
    [{}, { ROSTER_PORT: '8o80' }, 'ROSTER_PORT'],
    [{ sync: 'sometimes' }, {}, '--sync'],
    [{ 'cors-origins': 'example.com' }, {}, '--cors-origins'],
    [{ 'cors-origins': 'https://a.example.com/path' }, {}, '--cors-origins'],
    [{ 'public-url': 'ftp://x' }, {}, '--public-url'],
    [{ host: 'bad host' }, {}, '--host'],
    [{ 'users-access': 'closed' }, {}, '--users-access'],
    [{}, { ROSTER_TRUST_PROXY: 'maybe' }, 'ROSTER_TRUST_PROXY'],
    [{ 'max-file-size': '10MB' }, {}, '--max-file-size'],
    [{ 'max-file-size': '1.5MiB' }, {}, '--max-file-size'],
    [{ 'max-file-size': '0' }, {}, '--max-file-size'],
    [{ 'max-files': '0' }, {}, '--max-files'],
    [{ 'rate-limit': '50' }, {}, '--rate-limit'],
    [{ 'rate-limit': '0/s' }, {}, '--rate-limit'],
    [{ 'rate-limit': '50/m' }, {}, '--rate-limit'],
    [{}, { ROSTER_RATE_LIMIT: '1.5/s' }, 'ROSTER_RATE_LIMIT'],
    [{ 'smtp-timeout': '0s' }, {}, '--smtp-timeout'],
    [{ 'smtp-timeout': '500ms' }, {}, '--smtp-timeout'],
    [{}, { ROSTER_SMTP_TIMEOUT: '1h' }, 'ROSTER_SMTP_TIMEOUT'],
    [{ 'storage-timeout': '0s' }, {}, '--storage-timeout'],
    [{ 'storage-timeout': '30' }, {}, '--storage-timeout'],
    [{ 'storage-timeout': '1h' }, {}, '--storage-timeout'],
  ])('%p / %p is a ConfigError naming %s', (flags, env, name) => {
    expect(() => loadConfig(flags as Record<string, string>, env)).toThrow(ConfigError)
    expect(() => loadConfig(flags as Record<string, string>, env)).toThrow(name)
  })
})
