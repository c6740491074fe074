// The ceiling for this stack: raw Bun.serve + bun:sqlite with prepared statements, answering
// the benchmarked routes with the same JSON shapes roster uses, and nothing else (no
// validation beyond what the route needs, no error envelope, no logging, no CORS).
// Usage: bun bench/baseline.ts <db-path> <port> [full|normal]
import { Database } from 'bun:sqlite'

const [dbPath = 'baseline.db', portText = '0', sync = 'normal'] = process.argv.slice(2)
const db = new Database(dbPath, { create: true, strict: true })
db.run('PRAGMA journal_mode = WAL')
db.run(`PRAGMA synchronous = ${sync === 'full' ? 'FULL' : 'NORMAL'}`)
db.run('PRAGMA busy_timeout = 5000')
db.run(`CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`)

const startedAt = Date.now()
const columns = 'id, name, email, created_at, updated_at'
const ping = db.query('SELECT 1')
const byId = db.query(`SELECT ${columns} FROM users WHERE id = ?`)
const page = db.query(`SELECT ${columns} FROM users ORDER BY id LIMIT ? OFFSET ?`)
const after = db.query(`SELECT ${columns} FROM users WHERE id > ? ORDER BY id LIMIT ?`)
const total = db.query<{ n: number }, []>('SELECT count(*) AS n FROM users')
const insert = db.query(
  `INSERT INTO users (name, email, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING ${columns}`,
)
const rename = db.query(
  `UPDATE users SET name = ?, updated_at = ? WHERE id = ? RETURNING ${columns}`,
)
const remove = db.query('DELETE FROM users WHERE id = ?')
const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })

const server = Bun.serve({
  port: Number(portText),
  hostname: '127.0.0.1',
  routes: {
    // Same body as roster's /health: a database check and the uptime.
    '/health': () => {
      ping.get()
      return json({
        status: 'ok',
        version: '0.0.0',
        uptime_s: Math.floor((Date.now() - startedAt) / 1000),
        checks: { database: 'ok', storage: 'ok' },
      })
    },
    '/users/:id': {
      GET: (req) => {
        const user = byId.get(Number(req.params.id))
        return user ? json(user) : json({ error: 'not found' }, 404)
      },
      PATCH: async (req) => {
        const body = (await req.json()) as { name: string }
        const user = rename.get(body.name, new Date().toISOString(), Number(req.params.id))
        return user ? json(user) : json({ error: 'not found' }, 404)
      },
      DELETE: (req) => {
        const id = Number(req.params.id)
        return remove.run(id).changes > 0
          ? json({ id, deleted: true })
          : json({ error: 'not found' }, 404)
      },
    },
    '/users': {
      GET: (req) => {
        const url = new URL(req.url)
        const limit = Number(url.searchParams.get('limit') ?? 20)
        const offset = Number(url.searchParams.get('offset') ?? 0)
        const n = total.get()?.n ?? 0
        return json(
          { data: page.all(limit, offset), pagination: { limit, offset, total: n } },
          200,
          {
            'x-total-count': String(n),
          },
        )
      },
      POST: async (req) => {
        const body = (await req.json()) as { name: string; email: string }
        const at = new Date().toISOString()
        return json(insert.get(body.name, body.email, at, at), 201)
      },
    },
    '/v2/users': (req) => {
      const url = new URL(req.url)
      const limit = Number(url.searchParams.get('limit') ?? 20)
      const cursor = url.searchParams.get('cursor')
      const afterId = cursor ? Number(Buffer.from(cursor, 'base64url').toString().slice(3)) : 0
      const rows = after.all(afterId, limit + 1) as { id: number }[]
      const data = rows.slice(0, limit)
      const next =
        rows.length > limit ? Buffer.from(`id:${data.at(-1)?.id}`).toString('base64url') : null
      const n = total.get()?.n ?? 0
      return json({ data, pagination: { limit, offset: 0, total: n, next_cursor: next } }, 200, {
        'x-total-count': String(n),
      })
    },
  },
  fetch: () => json({ error: 'not found' }, 404),
})
console.log(`baseline listening on ${server.url}`)
