import { randomText } from '../../db/random-id'
import type { Db } from './connection'

/**
 * A random secret kept in the database, created the first time it is asked for. Plain
 * statements, not Drizzle's builders: this runs at every start, where a builder's first use
 * costs milliseconds.
 */
export function installSecret(db: Db, name: string): Buffer {
  const read = db.$client.query<{ value: string }, [string]>(
    'SELECT value FROM settings WHERE key = ?',
  )
  const existing = read.get(name)
  if (existing !== null) return Buffer.from(existing.value, 'base64')
  const value = randomText(32, 'base64')
  db.$client.run('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING', [
    name,
    value,
  ])
  // Re-read: another process may have created it first.
  return Buffer.from(read.get(name)?.value ?? value, 'base64')
}
