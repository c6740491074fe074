import { eq } from 'drizzle-orm'
import { randomText } from '../../db/random-id'
import type { Db } from './connection'
import { settings } from './schema'

/** A random secret kept in the database, created the first time it is asked for. */
export function installSecret(db: Db, name: string): Buffer {
  const existing = db.select().from(settings).where(eq(settings.key, name)).get()
  if (existing !== undefined) return Buffer.from(existing.value, 'base64')
  const value = randomText(32, 'base64')
  db.insert(settings).values({ key: name, value }).onConflictDoNothing().run()
  // Re-read: another process may have created it first.
  const stored = db.select().from(settings).where(eq(settings.key, name)).get()
  return Buffer.from(stored?.value ?? value, 'base64')
}
