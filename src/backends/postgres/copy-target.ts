import type { SQL } from 'bun'
import { CopyError } from '../../db/errors'
import type { PendingFiles } from '../../uploads/files'
import { connectPostgres, openPostgres } from './connection'
import { runPgMigrations } from './migrate'
import { createPgPendingFiles } from './pending-objects'

/** A table's rows as the copy reads them from the source. */
export interface SourceRows {
  columns: string[]
  values: Iterable<unknown[]>
}

/** The PostgreSQL database `roster copy` fills: everything it asks of it. */
export interface CopyTarget {
  /** The bucket's pending files (the objects the copy writes before its rows commit). */
  readonly pendingFiles: PendingFiles
  /** Which of these tables hold rows. */
  occupied(tables: readonly string[]): Promise<string[]>
  pendingIds(): Promise<string[]>
  settings(): Promise<{ key: string; value: string }[]>
  count(table: string): Promise<number>
  /**
   * Every table's rows in one transaction, which also forgets `placed` as pending: once it
   * commits the copy is whole; until then every table stays empty. Identity columns continue
   * after the copied ids.
   */
  fill(
    tables: readonly string[],
    rowsOf: (table: string) => SourceRows,
    placed: readonly string[],
    advance: (rows: number) => void,
  ): Promise<void>
  close(): Promise<void>
}

/** Connects to the target database and migrates it to this binary's schema. */
export async function openCopyTarget(url: string): Promise<CopyTarget> {
  const db = openPostgres(url, { prepare: true, max: 2 })
  const pool = db.$client
  try {
    await connectPostgres(db, url)
    await runPgMigrations(pool)
  } catch (error) {
    await pool.close().catch(() => {})
    throw error
  }
  const count = async (table: string) => {
    const [row] = await pool.unsafe(`SELECT count(*)::int AS n FROM ${table}`)
    return (row as { n: number }).n
  }
  return {
    pendingFiles: createPgPendingFiles(pool),
    async occupied(tables) {
      const taken: string[] = []
      for (const table of tables) {
        const [row] = await pool.unsafe(`SELECT EXISTS (SELECT 1 FROM ${table}) AS taken`)
        if ((row as { taken: boolean }).taken) taken.push(table)
      }
      return taken
    },
    async pendingIds() {
      const rows = await pool<{ id: string }[]>`SELECT id FROM pending_objects ORDER BY id`
      return rows.map((row) => row.id)
    },
    async settings() {
      const rows = await pool<{ key: string; value: string }[]>`
        SELECT key, value FROM settings ORDER BY key`
      return rows.map(({ key, value }) => ({ key, value }))
    },
    count,
    async fill(tables, rowsOf, placed, advance) {
      await pool.begin(async (tx) => {
        for (const table of tables) await copyTable(tx, table, rowsOf(table), advance)
        if (tables.includes('webhook_dispatch')) await translateFeedPositions(tx)
        if (placed.length > 0) {
          await tx`DELETE FROM pending_objects WHERE id = ANY(${placed}::text[])`
        }
      })
    },
    close: () => pool.close(),
  }
}

/**
 * Feed positions as PostgreSQL writes them. SQLite's is an event's seq (16 digits); here it is
 * the writing transaction's xid and the seq (postgres/audit.ts). Every copied event was written
 * by this one transaction with its seq kept, so SQLite's place `S` is `(this xid, S)` here: the
 * outbound dispatcher goes on from exactly where it was, and endpoints start where they did.
 */
async function translateFeedPositions(tx: SQL): Promise<void> {
  const translated = (column: string) =>
    `lpad(pg_current_xact_id()::text, 20, '0') || '.' || lpad((${column})::bigint::text, 19, '0')`
  await tx.unsafe(`UPDATE webhook_dispatch SET position = ${translated('position')}`)
  await tx.unsafe(`UPDATE webhook_endpoints SET starts_after = ${translated('starts_after')}`)
}

/** Column names and PostgreSQL types of a target table. */
async function targetColumns(tx: SQL, table: string): Promise<Map<string, string>> {
  const rows = (await tx`
    SELECT column_name, data_type FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ${table}`) as {
    column_name: string
    data_type: string
  }[]
  return new Map(rows.map((row) => [row.column_name, row.data_type]))
}

async function copyTable(
  tx: SQL,
  table: string,
  source: SourceRows,
  advance: (rows: number) => void,
): Promise<void> {
  const types = await targetColumns(tx, table)
  const { columns } = source
  const missing = columns.filter((column) => !types.has(column))
  if (missing.length > 0) {
    throw new CopyError(`table ${table}: the target has no column ${missing.join(', ')}`)
  }
  const quoted = columns.map((column) => `"${column}"`).join(', ')
  // PostgreSQL takes at most 65,535 parameters in one statement.
  const perBatch = Math.max(1, Math.floor(30_000 / columns.length))
  let batch: unknown[][] = []
  const flush = async () => {
    if (batch.length === 0) return
    const params: unknown[] = []
    const tuples = batch.map((row) => {
      const slots = row.map((value) => {
        params.push(value)
        return `$${params.length}`
      })
      return `(${slots.join(', ')})`
    })
    await tx.unsafe(`INSERT INTO ${table} (${quoted}) VALUES ${tuples.join(', ')}`, params)
    advance(batch.length)
    batch = []
  }
  for (const row of source.values) {
    batch.push(row.map((value, i) => toPostgres(value, types.get(columns[i] as string))))
    if (batch.length >= perBatch) await flush()
  }
  await flush()
  await resetIdentity(tx, table)
}

/** SQLite's values as PostgreSQL takes them: 0/1 as booleans, the rest as they are. */
function toPostgres(value: unknown, type: string | undefined): unknown {
  if (value === null) return null
  if (type === 'boolean') return value === 1 || value === true
  if (type === 'bigint' || type === 'integer')
    return typeof value === 'bigint' ? value : Number(value)
  return value
}

/** Identity columns continue after the copied ids. */
async function resetIdentity(tx: SQL, table: string): Promise<void> {
  const identities = (await tx`
    SELECT column_name FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ${table} AND is_identity = 'YES'`) as {
    column_name: string
  }[]
  for (const { column_name: column } of identities) {
    await tx.unsafe(
      `SELECT setval(pg_get_serial_sequence('${table}', '${column}'), coalesce(max("${column}"), 1), max("${column}") IS NOT NULL) FROM ${table}`,
    )
  }
}
