// The floor for POST /users on PostgreSQL: raw Bun.serve + Bun.SQL writing into roster's own
// schema (migrated by roster beforehand), with no framework, no validation and no error
// envelope, so that what is left is what the database work costs by itself. Each mode is one
// design a POST could have:
// - `user`: the user's row alone, one autocommit INSERT (no audit event: the contract's
//   section 16 forbids this, it is here to show what the table's indexes and count cost);
// - `user-and-event`: the user and its audit event in one statement (a CTE), which is what any
//   design that commits the event with the write must at least do;
// - `user-and-event-notify`: the same with the live feed's pg_notify in the statement;
// - `transaction`: BEGIN, the user, the event, COMMIT (four round trips, no lock or probe).
// In every mode GET /users/{id} reads a user as roster answers it (its record with `groups`,
// `email_verified_at` formatted, the version as its ETag) in roster's one statement.
// Usage: bun bench/postgres-floor.ts <postgres-url> <port> <mode>
import { SQL } from 'bun'
import { searchKeyOf } from '../src/users/search-key'

const MODES = ['user', 'user-and-event', 'user-and-event-notify', 'transaction'] as const
type Mode = (typeof MODES)[number]

const [url = '', portText = '0', modeText = 'user'] = process.argv.slice(2)
if (!MODES.includes(modeText as Mode)) throw new Error(`mode is one of ${MODES.join(', ')}`)
const mode = modeText as Mode
// As many connections as roster keeps (10 per instance).
const sql = new SQL(url, { max: 10 })

interface Input {
  name: string
  email: string
  key: string
  search: string
  at: string
  changes: string
}

const insertUser = (q: SQL, i: Input) => q`
  INSERT INTO users (name, email, email_key, username, username_key, created_at, updated_at, search_key)
  VALUES (${i.name}, ${i.email}, ${i.key}, ${i.email}, ${i.key}, ${i.at}, ${i.at}, ${i.search})
  RETURNING id, name, email, created_at, updated_at`

/** The user and its event in one statement; with `notify`, the live feed's wake-up as well. */
function userAndEvent({ notify }: { notify: boolean }): (i: Input) => Promise<unknown[]> {
  const text = `
    WITH u AS (
      INSERT INTO users (name, email, email_key, username, username_key, created_at, updated_at, search_key)
      VALUES ($1, $2, $3, $2, $3, $4, $4, $5)
      RETURNING id, name, email, created_at, updated_at),
    event AS (
      INSERT INTO audit_events (at, actor_type, actor_id, action, target_type, target_id, request_id, ip, changes)
      SELECT $6, 'user', NULL, 'user.created', 'user', u.id::text, 'req_floor', '127.0.0.1', $7
      FROM u RETURNING 1)${notify ? ",\n    woken AS (SELECT pg_notify('roster_audit', '') FROM event)" : ''}
    SELECT u.*, (SELECT count(*) FROM ${notify ? 'woken' : 'event'}) AS events FROM u`
  return (i) => sql.unsafe(text, [i.name, i.email, i.key, i.at, i.search, i.at, i.changes])
}

const WRITES: Record<Mode, (i: Input) => Promise<unknown[]>> = {
  user: (i) => insertUser(sql, i),
  'user-and-event': userAndEvent({ notify: false }),
  'user-and-event-notify': userAndEvent({ notify: true }),
  transaction: (i) =>
    sql.begin(async (tx) => {
      const rows = await insertUser(tx, i)
      const id = String((rows[0] as { id: number }).id)
      await tx`
        INSERT INTO audit_events (at, actor_type, actor_id, action, target_type, target_id, request_id, ip, changes)
        VALUES (${i.at}, 'user', NULL, 'user.created', 'user', ${id}, 'req_floor', '127.0.0.1', ${i.changes})`
      return rows
    }),
}
const write = WRITES[mode]

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })

const readRecord = (id: number) => sql<{ version: number }[]>`
  SELECT id, name, email, coalesce(username, email) AS username, created_at, updated_at, role,
    to_char(email_verified_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS email_verified_at,
    version, active,
    coalesce((SELECT json_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.user_id = users.id), '[]'::json) AS groups
  FROM users WHERE id = ${id}::int8`

const server = Bun.serve({
  port: Number(portText),
  hostname: '127.0.0.1',
  routes: {
    '/health': () => json({ status: 'ok' }),
    '/users/:id': async (req) => {
      const [user] = await readRecord(Number(req.params.id))
      if (user === undefined) return json({ error: 'not found' }, 404)
      return json(user, 200, { etag: `"${user.version}"` })
    },
    '/users': {
      POST: async (req) => {
        const { name, email } = (await req.json()) as { name: string; email: string }
        const at = new Date().toISOString()
        const changes = JSON.stringify({
          name: { before: null, after: name },
          email: { before: null, after: email },
        })
        const key = email.toLowerCase()
        const [user] = await write({
          name,
          email,
          key,
          search: searchKeyOf(name, email),
          at,
          changes,
        })
        return json(user, 201)
      },
    },
  },
  fetch: () => json({ error: 'not found' }, 404),
})
console.log(`postgres floor (${mode}) listening on ${server.url}`)
