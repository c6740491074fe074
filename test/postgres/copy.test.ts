import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import * as OTPAuth from 'otpauth'
import { GROUP_SCHEMA } from '../../src/scim/names'
import { tempDir } from '../helpers/app'
import { SoftAuthenticator } from '../helpers/authenticator'
import { BINARY, cleanEnv, requireBinary, runBinary, startBinary } from '../helpers/binary'
import { until } from '../helpers/cluster'
import { freshDatabase, queryOnce } from '../helpers/postgres'
import { startReceiver, verifyDelivery } from '../helpers/receiver'
import { freshStorage, incompleteUploadsUnder, objectsUnder } from '../helpers/s3'
import { STRIPE_SECRET, stripeHeaders } from '../helpers/webhooks'

setDefaultTimeout(60_000)

const PASSWORD = 'correct horse battery staple'
/** Objects the copy has written and not yet registered (0 before it made its tables). */
async function pendingRows(url: string): Promise<number> {
  const rows = await queryOnce<{ n: number }>(
    url,
    'SELECT count(*)::int AS n FROM pending_objects',
  ).catch(() => [])
  return rows[0]?.n ?? 0
}

const json = (body: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
})

describe('roster copy (the compiled binary)', () => {
  test('moves a SQLite roster (users, keys, sessions, uploads, webhook events) into PostgreSQL and a bucket; the copy serves every flow', async () => {
    requireBinary()
    using dir = tempDir()
    await using database = await freshDatabase()
    const { storage, env: s3env } = await freshStorage()
    const env = cleanEnv({ ...s3env, ROSTER_WEBHOOK_SECRET: STRIPE_SECRET })
    const data = ['--data-dir', dir.path]
    await using receiver = await startReceiver('fail')

    // A roster on its embedded default, with something of everything.
    const key = (
      await runBinary(['keys', 'create', '--name', 'ops', ...data], { env })
    ).stdout.trim()
    const idp = (
      await runBinary(['keys', 'create', '--name', 'idp', '--scope', 'scim', ...data], { env })
    ).stdout.trim()
    const scim = { authorization: `Bearer ${idp}`, 'content-type': 'application/scim+json' }
    const sqlite = await startBinary([...data, '--webhook-allow-private'], { env })
    let cookie: string
    const authenticator = await SoftAuthenticator.create()
    let secret: string
    let fileId: string
    let sha256: string
    const bytes = crypto.getRandomValues(new Uint8Array(300_000))
    try {
      // An endpoint whose receiver fails: its deliveries wait in the queue when the copy runs.
      const endpoint = await fetch(`${sqlite.url}/webhook-endpoints`, {
        ...json({ url: receiver.url, events: ['user.created'] }),
        headers: { 'content-type': 'application/json', 'x-api-key': key },
      })
      expect(endpoint.status).toBe(201)
      secret = ((await endpoint.json()) as { secret: string }).secret
      for (let i = 0; i < 30; i += 1) {
        const made = await fetch(
          `${sqlite.url}/users`,
          json({ name: `User ${i}`, email: `user${i}@example.com`, password: PASSWORD }),
        )
        expect(made.status).toBe(201)
      }
      const login = await fetch(
        `${sqlite.url}/login`,
        json({ email: 'user3@example.com', password: PASSWORD }),
      )
      cookie = (login.headers.get('set-cookie') ?? '').split(';', 1)[0] as string
      // A passkey and TOTP, which must sign the user in the same way after the move.
      const bearer = {
        'content-type': 'application/json',
        authorization: `Bearer ${((await login.json()) as { access_token: string }).access_token}`,
      }
      const options = await fetch(`${sqlite.url}/auth/passkeys/register/options`, {
        method: 'POST',
        headers: bearer,
        body: '{}',
      })
      const registration = authenticator.register((await options.json()) as never)
      const registered = await fetch(`${sqlite.url}/auth/passkeys/register/verify`, {
        method: 'POST',
        headers: bearer,
        body: JSON.stringify(registration),
      })
      expect(registered.status).toBe(201)
      const enrolled = await fetch(`${sqlite.url}/auth/totp/enroll`, {
        method: 'POST',
        headers: bearer,
        body: '{}',
      })
      const { secret: totpSecret } = (await enrolled.json()) as { secret: string }
      const app = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(totpSecret) })
      const confirmed = await fetch(`${sqlite.url}/auth/totp/confirm`, {
        method: 'POST',
        headers: bearer,
        body: JSON.stringify({ code: app.generate() }),
      })
      expect(confirmed.status).toBe(200)
      const upload = await fetch(`${sqlite.url}/upload?filename=photo.bin&public=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: bytes,
      })
      const file = ((await upload.json()) as { files: { id: string; sha256: string }[] }).files[0]
      fileId = file?.id as string
      sha256 = file?.sha256 as string
      const event = JSON.stringify({
        id: 'evt_moved',
        type: 'customer.created',
        data: { object: { email: 'hooked@example.com', name: 'Hooked' } },
      })
      const hook = await fetch(`${sqlite.url}/webhooks`, {
        method: 'POST',
        body: event,
        headers: await stripeHeaders(event),
      })
      expect(hook.status).toBe(200)
      // A group an identity provider pushed, with its externalId.
      const pushed = await fetch(`${sqlite.url}/scim/v2/Groups`, {
        method: 'POST',
        headers: scim,
        body: JSON.stringify({
          schemas: [GROUP_SCHEMA],
          displayName: 'Everyone',
          externalId: '00gMoved',
        }),
      })
      expect(pushed.status).toBe(201)
      await Bun.sleep(300)
    } finally {
      expect(await sqlite.stop()).toBe(0)
    }

    const target = `s3://${storage.bucket}/${storage.prefix}`
    const copy = ['copy', ...data, '--to', database.url, '--storage', target]
    const copied = await runBinary(copy, { env })
    expect(copied.code).toBe(0)
    expect(copied.stdout).toContain('copied and verified: settings')
    expect(copied.stdout).toContain('users 31')
    expect(copied.stdout).toContain('1 file(s)')
    // The progress: plain lines off a terminal, the last one at 100 %.
    // 39 rows of users, keys, sessions, uploads and inbound events, 39 audit events, an
    // endpoint, its 31 queued deliveries and the dispatcher's place; a passkey, a TOTP secret,
    // ten recovery codes and the registration's spent challenge; the SCIM group and its
    // externalId.
    expect(copied.stderr).toContain('copying rows: 126 rows (100%)')
    expect(copied.stderr).toContain('copying files: 1 files (100%)')
    expect(await objectsUnder(storage.prefix)).toEqual([fileId])

    // Run again on the finished copy: nothing to do but check it.
    const again = await runBinary(copy, { env })
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('the target already holds this copy; verified: settings')

    // The copy serves the same answers: sessions, keys, passwords, files, events, new ids.
    const flags = [
      '--database-url',
      database.url,
      '--storage',
      target,
      '--webhook-allow-private',
      ...data,
    ]
    const moved = await startBinary(flags, { env })
    try {
      expect((await fetch(`${moved.url}/me`, { headers: { cookie } })).status).toBe(200)
      const listed = await fetch(`${moved.url}/data`, { headers: { 'x-api-key': key } })
      expect(await listed.json()).toMatchObject({ data: { users: 31 } })
      const signIn = await fetch(
        `${moved.url}/login`,
        json({ email: 'user7@example.com', password: PASSWORD }),
      )
      expect(signIn.status).toBe(200)
      // The passkey and the second factor came along.
      const totpAccount = await fetch(
        `${moved.url}/login`,
        json({ email: 'user3@example.com', password: PASSWORD }),
      )
      expect(await totpAccount.json()).toMatchObject({ mfa_required: true })
      const passkeyOptions = await fetch(`${moved.url}/auth/passkeys/login/options`, json({}))
      const assertion = await authenticator.assert((await passkeyOptions.json()) as never)
      const passkeySignIn = await fetch(`${moved.url}/auth/passkeys/login/verify`, json(assertion))
      expect(passkeySignIn.status).toBe(200)
      const byExternalId = await fetch(
        `${moved.url}/scim/v2/Groups?filter=${encodeURIComponent('externalId eq "00gMoved"')}`,
        { headers: scim },
      )
      expect(await byExternalId.json()).toMatchObject({
        totalResults: 1,
        Resources: [{ displayName: 'Everyone', externalId: '00gMoved' }],
      })
      const download = await fetch(`${moved.url}/files/${fileId}`)
      expect(download.headers.get('etag')).toBe(`"${sha256}"`)
      expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes)
      const events = await fetch(`${moved.url}/webhooks/events`, {
        headers: { 'x-api-key': key },
      })
      const listedEvents = (await events.json()) as { data: { id: string; status: string }[] }
      expect(listedEvents.data.map((e) => [e.id, e.status])).toEqual([['evt_moved', 'processed']])
      const next = await fetch(
        `${moved.url}/users`,
        json({ name: 'New', email: 'new@example.com' }),
      )
      expect(((await next.json()) as { id: number }).id).toBe(32)
      // The queue goes on where SQLite left it: the 31 waiting, then the new user, each once.
      receiver.mode = 'ok'
      await receiver.until(32, 30_000)
      await Bun.sleep(300)
      const delivered = receiver.answered.map((entry) => entry.payload.data.target)
      expect(delivered).toEqual(
        Array.from({ length: 32 }, (_, i) => ({ type: 'user', id: String(i + 1) })),
      )
      for (const entry of receiver.answered) verifyDelivery(entry, secret)
    } finally {
      await moved.stop()
    }
  })

  test('a copy killed midway is finished by running it again: the objects it left are deleted, the rest copied', async () => {
    requireBinary()
    using dir = tempDir()
    await using database = await freshDatabase()
    const { storage, env: s3env } = await freshStorage()
    const env = cleanEnv({ ...s3env })
    const data = ['--data-dir', dir.path]
    const sqlite = await startBinary(data, { env })
    const ids: string[] = []
    try {
      for (let i = 0; i < 24; i += 1) {
        const upload = await fetch(`${sqlite.url}/upload?filename=f${i}.bin`, {
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream' },
          body: crypto.getRandomValues(new Uint8Array(60_000)).map((b, j) => b ^ i ^ j),
        })
        ids.push(((await upload.json()) as { files: { id: string }[] }).files[0]?.id as string)
      }
    } finally {
      await sqlite.stop()
    }
    const target = `s3://${storage.bucket}/${storage.prefix}`
    const copy = ['copy', ...data, '--to', database.url, '--storage', target]
    // Killed while it copies the files: some objects are in the bucket, listed as pending.
    const first = Bun.spawn([BINARY, ...copy], { env, stdout: 'ignore', stderr: 'ignore' })
    await until(async () => (await pendingRows(database.url)) >= 3, 20_000)
    first.kill('SIGKILL')
    await first.exited
    const left = await pendingRows(database.url)
    expect(left).toBeGreaterThanOrEqual(3)
    expect((await objectsUnder(storage.prefix)).length).toBeGreaterThanOrEqual(left - 1)
    const again = await runBinary(copy, { env })
    expect(again.stderr).toMatch(/removed \d+ object\(s\) an interrupted copy left/)
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('copied and verified')
    expect(await objectsUnder(storage.prefix)).toEqual([...ids].sort())
    expect(await pendingRows(database.url)).toBe(0)
    expect(await incompleteUploadsUnder(storage.prefix)).toEqual([])
  })

  test('a target that holds something else is refused, with how to start over', async () => {
    requireBinary()
    using dir = tempDir()
    await using database = await freshDatabase()
    const data = ['--data-dir', dir.path]
    await runBinary(['users', 'create', '--name', 'A', '--email', 'a@example.com', ...data])
    await runBinary([
      'users',
      'create',
      '--name',
      'B',
      '--email',
      'b@example.com',
      '--database-url',
      database.url,
      ...data,
    ])
    const refused = await runBinary(['copy', ...data, '--to', database.url])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('is not empty')
    expect(refused.stderr).toContain('to start over')
  })

  test('refusals: no --to, a target that is not postgres://, a data dir without a roster', async () => {
    requireBinary()
    using dir = tempDir()
    await using database = await freshDatabase()
    const noTo = await runBinary(['copy', '--data-dir', dir.path])
    expect(noTo.code).toBe(2)
    expect(noTo.stderr).toContain('--to')
    const notPostgres = await runBinary(['copy', '--data-dir', dir.path, '--to', 'mysql://x/y'])
    expect(notPostgres.code).toBe(2)
    const empty = await runBinary(['copy', '--data-dir', dir.path, '--to', database.url])
    expect(empty.code).toBe(1)
    expect(empty.stderr).toContain('no roster database')
  })
})
