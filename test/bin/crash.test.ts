// Crash safety of the compiled binary: SIGKILL at a random moment under concurrent writes,
// restart, and compare the database with what the clients were told. ROSTER_CRASH_TRIALS sets
// the number of kills (50 by default; `bun bench/crash.ts` runs more).

import { Database } from 'bun:sqlite'
import { beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { requireBinary, startBinary } from '../helpers/binary'

beforeAll(requireBinary)

const TRIALS = Number(process.env.ROSTER_CRASH_TRIALS ?? 50)
// Enough concurrent writers that the group commit batches them (one fsync for several answers).
const CLIENTS = 16

/** A small seeded PRNG (mulberry32), so a failing trial can be replayed from its seed. */
function random(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Known {
  email: string
  name: string
  deleted: boolean
  /** A write whose answer never came: after the restart either outcome is right. */
  unsure?: { kind: 'create' } | { kind: 'rename'; name: string } | { kind: 'delete' }
}

/** What the clients were told, per email (unique per user across all trials). */
class Model {
  readonly users = new Map<string, Known>()
  /** Writes answered with an error: each must have changed nothing. */
  readonly refused: { email: string; kind: string }[] = []
  acknowledged = 0
}

async function send(url: string, method: string, path: string, body?: unknown, headers = {}) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, body: text === '' ? null : JSON.parse(text) }
}

/** One client: creates, renames and deletes its own users, and makes writes that must fail. */
async function client(
  url: string,
  model: Model,
  ids: Map<string, number>,
  tag: string,
  next: () => number,
  running: () => boolean,
) {
  let n = 0
  while (running()) {
    const mine = [...model.users.entries()].filter(
      ([email, user]) => email.includes(`-${tag}-`) && !user.deleted && user.unsure === undefined,
    )
    const roll = next()
    const target = mine.length > 0 ? mine[Math.floor(next() * mine.length)] : undefined
    try {
      if (target === undefined || roll < 0.4) {
        const email = `crash-${tag}-${n++}@example.com`
        const name = `Created ${email}`
        model.users.set(email, { email, name, deleted: false, unsure: { kind: 'create' } })
        const reply = await send(url, 'POST', '/users', { name, email })
        if (reply.status !== 201) throw new Error(`POST answered ${reply.status}`)
        ids.set(email, reply.body.id)
        model.users.set(email, { email, name, deleted: false })
        model.acknowledged++
      } else if (roll < 0.7) {
        const [email, user] = target
        const name = `Renamed ${n++}`
        user.unsure = { kind: 'rename', name }
        const reply = await send(url, 'PATCH', `/users/${ids.get(email)}`, { name })
        if (reply.status !== 200) throw new Error(`PATCH answered ${reply.status}`)
        user.name = name
        user.unsure = undefined
        model.acknowledged++
      } else if (roll < 0.85) {
        const [email, user] = target
        user.unsure = { kind: 'delete' }
        const reply = await send(url, 'DELETE', `/users/${ids.get(email)}`)
        if (reply.status !== 200) throw new Error(`DELETE answered ${reply.status}`)
        user.deleted = true
        user.unsure = undefined
        model.acknowledged++
      } else if (roll < 0.93) {
        // Must be refused: the email is taken.
        const [email] = target
        const reply = await send(url, 'POST', '/users', { name: 'Duplicate', email })
        if (reply.status !== 409) throw new Error(`duplicate POST answered ${reply.status}`)
        model.refused.push({ email, kind: 'duplicate create' })
      } else {
        // Must be refused: a stale ETag.
        const [email] = target
        const reply = await send(
          url,
          'PATCH',
          `/users/${ids.get(email)}`,
          { name: 'Stale' },
          {
            'if-match': '"0.0"',
          },
        )
        if (reply.status !== 412) throw new Error(`stale PATCH answered ${reply.status}`)
        model.refused.push({ email, kind: 'stale rename' })
      }
    } catch (error) {
      // The connection died with the server: the write in flight stays unsure.
      if (running()) throw error
      return
    }
  }
}

/** Compares the database after a restart with the model, and settles the unsure writes. */
function verify(dbPath: string, model: Model, ids: Map<string, number>) {
  const db = new Database(dbPath, { readonly: true })
  try {
    const rows = db
      .query<{ id: number; name: string; email: string }, []>(
        "SELECT id, name, email FROM users WHERE email LIKE 'crash-%'",
      )
      .all()
    const stored = new Map(rows.map((row) => [row.email, row]))
    const problems: string[] = []
    for (const [email, user] of model.users) {
      const row = stored.get(email)
      const unsure = user.unsure
      user.unsure = undefined
      if (unsure?.kind === 'create') {
        if (row === undefined) model.users.delete(email)
        else if (row.name !== user.name) problems.push(`${email}: created with another name`)
        else ids.set(email, row.id)
        continue
      }
      if (user.deleted) {
        if (row !== undefined) problems.push(`${email}: deleted (acknowledged) but present`)
        continue
      }
      if (row === undefined) {
        if (unsure?.kind === 'delete') user.deleted = true
        else problems.push(`${email}: acknowledged but missing`)
        continue
      }
      if (row.name === user.name) continue
      if (unsure?.kind === 'rename' && row.name === unsure.name) user.name = unsure.name
      else
        problems.push(
          `${email}: name ${JSON.stringify(row.name)}, acknowledged ${JSON.stringify(user.name)}`,
        )
    }
    for (const row of rows) {
      if (!model.users.has(row.email)) problems.push(`${row.email}: present but never written`)
    }
    for (const { email, kind } of model.refused) {
      const copies = rows.filter((row) => row.email.toLowerCase() === email).length
      if (copies > 1) problems.push(`${email}: refused ${kind} left a copy`)
      if (kind === 'stale rename' && stored.get(email)?.name === 'Stale') {
        problems.push(`${email}: refused ${kind} changed the name`)
      }
    }
    model.refused.length = 0
    expect(db.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' })
    return problems
  } finally {
    db.close()
  }
}

describe('crash safety (the compiled binary)', () => {
  test(
    `SIGKILL at a random moment under concurrent writes, ${TRIALS} times: every acknowledged write survives, no refused one lands`,
    async () => {
      using dir = tempDir()
      const dbPath = join(dir.path, 'roster.db')
      const model = new Model()
      const ids = new Map<string, number>()
      const seed = Number(process.env.ROSTER_CRASH_SEED ?? Date.now() % 1_000_000)
      const next = random(seed)
      for (let trial = 0; trial < TRIALS; trial++) {
        const server = await startBinary(['--data-dir', dir.path])
        const problems = verify(dbPath, model, ids)
        expect({ seed, trial, problems }).toEqual({ seed, trial, problems: [] })
        let running = true
        const clients = Array.from({ length: CLIENTS }, (_, c) =>
          client(server.url, model, ids, `${trial}x${c}`, next, () => running),
        )
        // Let the writes run for a random while, then kill the server mid-flight.
        await Bun.sleep(20 + Math.floor(next() * 150))
        running = false
        server.proc.kill('SIGKILL')
        await Promise.all(clients)
        await server.proc.exited
      }
      const server = await startBinary(['--data-dir', dir.path])
      try {
        expect({ seed, problems: verify(dbPath, model, ids) }).toEqual({ seed, problems: [] })
        expect(model.acknowledged).toBeGreaterThan(TRIALS * 5)
      } finally {
        await server.stop()
      }
    },
    TRIALS * 5_000 + 30_000,
  )
})

describe('graceful stop (the compiled binary)', () => {
  test('SIGTERM with requests in flight: each one completes, new ones are refused, exit 0 within the cap', async () => {
    using dir = tempDir()
    const server = await startBinary(['--data-dir', dir.path])
    // A slow upload: 8 chunks of 64 KiB, 100 ms apart, still arriving when the signal comes.
    const chunk = new Uint8Array(64 * 1024).fill(120)
    let sent = 0
    const slowBody = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === 8) return controller.close()
        await Bun.sleep(100)
        sent++
        controller.enqueue(chunk)
      },
    })
    const upload = fetch(`${server.url}/upload?filename=slow.bin`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: slowBody,
      duplex: 'half',
    } as RequestInit)
    // Writes whose JSON bodies are half sent when the signal comes.
    const halfSent = (json: string) => {
      const bytes = new TextEncoder().encode(json)
      const half = Math.floor(bytes.length / 2)
      let step = 0
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (step === 0) controller.enqueue(bytes.slice(0, half))
          else if (step === 1) {
            await Bun.sleep(400)
            controller.enqueue(bytes.slice(half))
          } else controller.close()
          step++
        },
      })
    }
    const writes = Array.from({ length: 20 }, (_, i) =>
      fetch(`${server.url}/users`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: halfSent(JSON.stringify({ name: `In flight ${i}`, email: `flight${i}@example.com` })),
        duplex: 'half',
      } as RequestInit),
    )
    await Bun.sleep(150)
    const signalled = performance.now()
    server.proc.kill('SIGTERM')
    await Bun.sleep(50)
    const late = await fetch(`${server.url}/health`).then(
      (response) => response.status,
      () => 'refused',
    )
    const answers = await Promise.all([upload, ...writes])
    const code = await server.proc.exited
    const took = performance.now() - signalled
    expect(late).toBe('refused')
    expect(answers.map((response) => response.status)).toEqual([201, ...writes.map(() => 201)])
    const stored = (await (answers[0] as Response).json()) as { files: { size: number }[] }
    expect(stored.files[0]?.size).toBe(8 * 64 * 1024)
    expect(code).toBe(0)
    expect(took).toBeLessThan(10_000)
    expect(server.stderr.join('\n')).toContain('SIGTERM received, shutting down')

    // Everything answered is there after the next start.
    const again = await startBinary(['--data-dir', dir.path])
    try {
      const list = (await (await fetch(`${again.url}/users?limit=100`)).json()) as {
        pagination: { total: number }
      }
      expect(list.pagination.total).toBe(20)
    } finally {
      await again.stop()
    }
  })
})
