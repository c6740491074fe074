import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir } from '../helpers/app'
import { cleanEnv, requireBinary, runBinary, startBinary } from '../helpers/binary'
import { freshDatabase } from '../helpers/postgres'
import { freshStorage, objectsUnder } from '../helpers/s3'
import { STRIPE_SECRET, stripeHeaders } from '../helpers/webhooks'

setDefaultTimeout(60_000)

const PASSWORD = 'correct horse battery staple'
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

    // A roster on its embedded default, with something of everything.
    const key = (
      await runBinary(['keys', 'create', '--name', 'ops', ...data], { env })
    ).stdout.trim()
    const sqlite = await startBinary(data, { env })
    let cookie: string
    let fileId: string
    let sha256: string
    const bytes = crypto.getRandomValues(new Uint8Array(300_000))
    try {
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
    expect(copied.stderr).toContain('copying rows: 38 rows (100%)')
    expect(copied.stderr).toContain('copying files: 1 files (100%)')
    expect(await objectsUnder(storage.prefix)).toEqual([fileId])

    const again = await runBinary(copy, { env })
    expect(again.code).toBe(1)
    expect(again.stderr.trim().split('\n').at(-1)).toContain('not empty')

    // The copy serves the same answers: sessions, keys, passwords, files, events, new ids.
    const flags = ['--database-url', database.url, '--storage', target, ...data]
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
    } finally {
      await moved.stop()
    }
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
