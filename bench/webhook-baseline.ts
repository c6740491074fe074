// The floor for a durable webhook receiver on this stack: raw Bun.serve + bun:sqlite at
// synchronous=FULL that checks the Stripe HMAC over the raw body, inserts the event (one commit
// before the answer), and after the answer creates the user and marks the event handled (a
// second commit), as roster does. No envelope, no logging, no retries, no slicing.
// Usage: bun bench/webhook-baseline.ts <db-path> <secret>
import { Database } from 'bun:sqlite'
import { createHmac, timingSafeEqual } from 'node:crypto'

const [dbPath = 'webhook-baseline.db', secret = 'whsec_bench_secret'] = process.argv.slice(2)
const db = new Database(dbPath, { create: true, strict: true })
db.run('PRAGMA journal_mode = WAL')
db.run('PRAGMA synchronous = FULL')
db.run(`CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE, payload TEXT NOT NULL,
  status TEXT NOT NULL)`)
db.run(`CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE)`)
const insertEvent = db.query(
  "INSERT INTO events (event_id, payload, status) VALUES (?, ?, 'pending') ON CONFLICT DO NOTHING",
)
// Events arrive in seq order and are handled in it, so the next ones are a primary-key range.
const pending = db.query<{ seq: number; payload: string }, [number]>(
  'SELECT seq, payload FROM events WHERE seq > ? ORDER BY seq LIMIT 64',
)
let handledUpTo = 0
const insertUser = db.query('INSERT INTO users (name, email) VALUES (?, ?) ON CONFLICT DO NOTHING')
const markHandled = db.query("UPDATE events SET status = 'processed' WHERE seq = ?")
const handle = db.transaction(() => {
  for (const event of pending.all(handledUpTo)) {
    const object = JSON.parse(event.payload).data.object
    insertUser.run(object.name, object.email)
    markHandled.run(event.seq)
    handledUpTo = event.seq
  }
})
let scheduled = false

const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(request) {
    const raw = await request.text()
    const header = request.headers.get('stripe-signature') ?? ''
    const t = /t=(\d+)/.exec(header)?.[1] ?? ''
    const given = Buffer.from(/v1=([0-9a-f]+)/.exec(header)?.[1] ?? '', 'hex')
    const expected = createHmac('sha256', secret).update(`${t}.${raw}`).digest()
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return new Response('{"error":"signature"}', { status: 400 })
    }
    insertEvent.run(JSON.parse(raw).id, raw)
    if (!scheduled) {
      scheduled = true
      setTimeout(() => {
        scheduled = false
        handle()
      }, 0)
    }
    return Response.json({ received: true })
  },
})
console.log(`baseline listening on ${server.url}`)
