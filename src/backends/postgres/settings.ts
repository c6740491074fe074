import { randomBytes } from 'node:crypto'
import type { SQL } from 'bun'

/**
 * A random secret kept in the database, created the first time it is asked for. Instances that
 * start together agree on one: the first insert wins and everyone reads it back.
 */
export async function pgInstallSecret(sql: SQL, name: string): Promise<Buffer> {
  const value = randomBytes(32).toString('base64')
  await sql`INSERT INTO settings (key, value) VALUES (${name}, ${value}) ON CONFLICT (key) DO NOTHING`
  const [stored] = await sql<{ value: string }[]>`SELECT value FROM settings WHERE key = ${name}`
  return Buffer.from(stored?.value ?? value, 'base64')
}
