import type { SQL } from 'bun'
import { lookupText } from '../db/postgres/text'
import { LOGIN_WINDOW_MS, type LoginFailureLog, MAX_FAILURES_PER_IP } from './limiter'

/**
 * Failed sign-ins as rows in the shared database, so every instance's limiter counts the
 * failures of all of them: ten wrong passwords spread over two instances lock the address on
 * both. Rows older than the window are deleted as failures are recorded.
 */
export class PgLoginFailures implements LoginFailureLog {
  constructor(private readonly pool: SQL) {}

  async recent(keys: readonly string[], since: number): Promise<number[][]> {
    const rows = await this.pool<{ subject: string; at: number }[]>`
      SELECT subject, at FROM (
        SELECT subject, at::float8 AS at,
               row_number() OVER (PARTITION BY subject ORDER BY at DESC) AS newest
        FROM login_failures WHERE subject = ANY(${keys.map(lookupText)}::text[]) AND at > ${since}
      ) recent WHERE newest <= ${MAX_FAILURES_PER_IP} ORDER BY at`
    return keys.map((key) =>
      rows.filter((row) => row.subject === lookupText(key)).map((row) => row.at),
    )
  }

  async record(keys: readonly string[], at: number): Promise<void> {
    await this.pool.begin(async (tx) => {
      for (const key of keys) {
        await tx`INSERT INTO login_failures (subject, at) VALUES (${lookupText(key)}, ${at})`
      }
      await tx`DELETE FROM login_failures WHERE at <= ${at - LOGIN_WINDOW_MS}`
    })
  }

  async clear(key: string): Promise<void> {
    await this.pool`DELETE FROM login_failures WHERE subject = ${lookupText(key)}`
  }
}
