import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkedAddresses, EgressRefused, postTo } from '../../src/egress/client'

const open = { allowPrivate: true }
const strict = { allowPrivate: false }

/** A receiver that answers with the Host it was asked for and the body it got. */
function echo() {
  return Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (request) =>
      new Response(`${request.headers.get('host')} ${await request.text()}`, {
        headers: { 'x-path': new URL(request.url).pathname },
      }),
  })
}

describe('checkedAddresses', () => {
  test('a name resolving to a private address is refused, naming the name and the address', async () => {
    const resolve = async () => ['93.184.215.14', '10.0.0.7']
    const error = await checkedAddresses(new URL('https://hooks.example.test/x'), {
      ...strict,
      resolve,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(EgressRefused)
    expect((error as Error).message).toBe(
      'hooks.example.test resolves to 10.0.0.7, which is not a global unicast address: private',
    )
  })

  test('literal addresses are checked as they are; IPv6 literals without their brackets', async () => {
    for (const url of ['http://127.0.0.1:9/', 'http://[::1]/', 'http://169.254.169.254/latest']) {
      await expect(checkedAddresses(new URL(url), strict)).rejects.toBeInstanceOf(EgressRefused)
      expect(await checkedAddresses(new URL(url), open)).toHaveLength(1)
    }
    expect(await checkedAddresses(new URL('http://[2606:4700::1111]/'), strict)).toEqual([
      '2606:4700::1111',
    ])
  })

  test('a name that does not resolve is refused with the resolver’s reason', async () => {
    const error = await checkedAddresses(new URL('http://no-such-host.invalid/'), strict).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(EgressRefused)
    expect((error as Error).message).toStartWith('no-such-host.invalid does not resolve')
  })

  test('localhost is resolved (it is a name) and refused as loopback', async () => {
    const error = await checkedAddresses(new URL('http://localhost:8080/'), strict).catch(
      (e: unknown) => e,
    )
    expect((error as Error).message).toMatch(
      /^localhost resolves to (127\.0\.0\.1|::1), which is not a global unicast address: loopback$/,
    )
  })

  test('an IPv6 literal carrying an IPv4 address is judged by that address, however the URL spells it', async () => {
    const refused = {
      'http://[::7f00:1]/':
        '::7f00:1 is not a global unicast address: IPv4-compatible, carrying 127.0.0.1: loopback',
      'http://[::127.0.0.1]/':
        '::7f00:1 is not a global unicast address: IPv4-compatible, carrying 127.0.0.1: loopback',
      'http://[::ffff:0:7f00:1]/':
        '::ffff:0:7f00:1 is not a global unicast address: IPv4-translated (SIIT), carrying 127.0.0.1: loopback',
      'http://[::a9fe:a9fe]/latest/meta-data':
        '::a9fe:a9fe is not a global unicast address: IPv4-compatible, carrying 169.254.169.254: link-local (cloud metadata services live at 169.254.169.254)',
    }
    for (const [url, message] of Object.entries(refused)) {
      const error = await checkedAddresses(new URL(url), strict).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(EgressRefused)
      expect((error as Error).message).toBe(message)
      expect(await checkedAddresses(new URL(url), open)).toHaveLength(1)
    }
  })

  test('a name resolving to such a form is refused by the IPv4 address it carries', async () => {
    const resolve = async () => ['2606:4700::1111', '64:ff9b::a9fe:a9fe']
    const error = await checkedAddresses(new URL('https://hooks.example.test/x'), {
      ...strict,
      resolve,
    }).catch((e: unknown) => e)
    expect((error as Error).message).toBe(
      'hooks.example.test resolves to 64:ff9b::a9fe:a9fe, which is not a global unicast address: NAT64, carrying 169.254.169.254: link-local (cloud metadata services live at 169.254.169.254)',
    )
  })
})

describe('postTo', () => {
  test('sends to the checked address with the URL’s host in Host (a later DNS answer cannot move it)', async () => {
    using server = echo()
    let lookups = 0
    const resolve = async () => {
      lookups += 1
      return ['127.0.0.1']
    }
    const answer = await postTo(
      new URL(`http://hooks.example.test:${server.port}/in?x=1`),
      'hello',
      { 'content-type': 'text/plain' },
      { ...open, resolve },
      5000,
    )
    expect(answer.status).toBe(200)
    expect(answer.body).toBe(`hooks.example.test:${server.port} hello`)
    expect(lookups).toBe(1)
  })

  test('a redirect is answered as it is, not followed', async () => {
    let followed = false
    using server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (request) => {
        if (new URL(request.url).pathname === '/elsewhere') followed = true
        return new Response(null, { status: 307, headers: { location: '/elsewhere' } })
      },
    })
    const answer = await postTo(new URL(`http://127.0.0.1:${server.port}/`), '{}', {}, open, 5000)
    expect(answer.status).toBe(307)
    expect(followed).toBe(false)
  })

  test('only the first KiB of an answer is kept', async () => {
    using server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => new Response('x'.repeat(100_000)),
    })
    const answer = await postTo(new URL(`http://127.0.0.1:${server.port}/`), '{}', {}, open, 5000)
    expect(answer.body).toBe('x'.repeat(1024))
  })

  test('a receiver that never answers is given up after the timeout', async () => {
    using server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => new Promise<Response>(() => {}),
    })
    const started = Date.now()
    const error = await postTo(
      new URL(`http://127.0.0.1:${server.port}/`),
      '{}',
      {},
      open,
      300,
    ).catch((e: unknown) => e)
    expect((error as Error).name).toBe('TimeoutError')
    expect(Date.now() - started).toBeLessThan(5000)
  })

  test('a private address is refused before anything is sent', async () => {
    let hits = 0
    using server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => {
        hits += 1
        return new Response('ok')
      },
    })
    await expect(
      postTo(new URL(`http://127.0.0.1:${server.port}/`), '{}', {}, strict, 5000),
    ).rejects.toBeInstanceOf(EgressRefused)
    expect(hits).toBe(0)
  })
})

describe('postTo over TLS, pinned to the address', () => {
  let dir: string
  let cert: string
  let key: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'roster-tls-'))
    const made = Bun.spawnSync([
      'openssl',
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '2',
      '-subj',
      '/CN=hooks.example.test',
      '-addext',
      'subjectAltName=DNS:hooks.example.test',
    ])
    if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)
    cert = readFileSync(join(dir, 'cert.pem'), 'utf8')
    key = readFileSync(join(dir, 'key.pem'), 'utf8')
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test('the certificate must be the URL’s host’s, though the connection is to its address', async () => {
    using server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      tls: { cert, key },
      fetch: (request) => new Response(request.headers.get('host')),
    })
    const resolve = async () => ['127.0.0.1']
    const policy = { ...open, ca: cert, resolve }
    const answer = await postTo(
      new URL(`https://hooks.example.test:${server.port}/`),
      '{}',
      {},
      policy,
      5000,
    )
    expect(answer).toMatchObject({ status: 200, body: `hooks.example.test:${server.port}` })
    // Another name on the same address: the certificate does not carry it, so nothing is sent.
    const error = await postTo(
      new URL(`https://other.example.test:${server.port}/`),
      '{}',
      {},
      policy,
      5000,
    ).catch((e: unknown) => e)
    expect((error as { code?: string }).code).toBe('ERR_TLS_CERT_ALTNAME_INVALID')
  })
})
