import { describe, expect, test } from 'bun:test'
import { type PgTable, getTableConfig as pgTableConfig } from 'drizzle-orm/pg-core'
import { type SQLiteTable, getTableConfig as sqliteTableConfig } from 'drizzle-orm/sqlite-core'
import * as pg from '../../src/backends/postgres/schema'
import * as sqlite from '../../src/backends/sqlite/schema'

/** table → column → whether it may be null, from drizzle's view of a schema module. */
function shape(tables: { name: string; columns: { name: string; notNull: boolean }[] }[]) {
  return Object.fromEntries(
    tables.map((table) => [
      table.name,
      Object.fromEntries(table.columns.map((column) => [column.name, column.notNull])),
    ]),
  )
}

/** Every foreign key whose column leads no index and no primary key: `table.column`. */
function unindexedForeignKeys(
  tables: {
    name: string
    columns: { name: string; primary: boolean }[]
    indexes: { config: { columns: unknown[] } }[]
    primaryKeys: { columns: { name: string }[] }[]
    foreignKeys: { reference(): { columns: { name: string }[] } }[]
  }[],
): string[] {
  const columnName = (column: unknown) => (column as { name?: string }).name
  return tables.flatMap((table) => {
    const leading = new Set([
      ...table.columns.filter((column) => column.primary).map((column) => column.name),
      ...table.primaryKeys.map((key) => key.columns[0]?.name),
      ...table.indexes.map((index) => columnName(index.config.columns[0])),
    ])
    return table.foreignKeys
      .map((key) => key.reference().columns[0]?.name)
      .filter((column) => !leading.has(column))
      .map((column) => `${table.name}.${column}`)
  })
}

const isTable = (value: unknown) =>
  typeof value === 'object' && value !== null && Symbol.for('drizzle:Name') in value

describe('the SQLite and PostgreSQL schemas', () => {
  const sqliteTables = Object.values(sqlite)
    .filter(isTable)
    .map((table) => sqliteTableConfig(table as SQLiteTable))
  const pgTables = Object.values(pg)
    .filter(isTable)
    .map((table) => pgTableConfig(table as PgTable))

  test('have the same tables, columns and nullability, but for what only a shared database needs', () => {
    const shared = shape(pgTables)
    for (const table of pg.SHARED_ONLY.tables) delete shared[table]
    for (const qualified of pg.SHARED_ONLY.columns) {
      const [table, column] = qualified.split('.') as [string, string]
      delete shared[table]?.[column]
    }
    expect(shared).toEqual(shape(sqliteTables))
  })

  test('have the same indexes and unique constraints, by name', () => {
    const names = (tables: { indexes: { config: { name?: string } }[] }[]) =>
      tables.flatMap((table) => table.indexes.map((index) => index.config.name)).sort()
    const sharedOnly: readonly (string | undefined)[] = pg.SHARED_ONLY.indexes
    const pgIndexes = names(pgTables).filter(
      (name) => !name?.startsWith('login_failures') && !sharedOnly.includes(name),
    )
    expect(pgIndexes).toEqual(names(sqliteTables))
  })

  // Deleting a user (or a key) looks up every row that refers to it, to cascade or set null:
  // without an index that is a scan of the whole table (uploads, say) per deletion.
  test('index every foreign key, so a deletion finds the rows that refer to it without a scan', () => {
    expect(unindexedForeignKeys(sqliteTables)).toEqual([])
    expect(unindexedForeignKeys(pgTables)).toEqual([])
  })

  test('the shared-only list names tables and columns that exist', () => {
    const all = shape(pgTables)
    for (const table of pg.SHARED_ONLY.tables) expect(Object.keys(all)).toContain(table)
    for (const qualified of pg.SHARED_ONLY.columns) {
      const [table, column] = qualified.split('.') as [string, string]
      expect(Object.keys(all[table] ?? {})).toContain(column)
    }
  })
})
