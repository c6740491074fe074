import { SQL } from 'bun'
import { PgLoginFailures } from '../../src/backends/postgres/login-failures'
import { runPgMigrations } from '../../src/backends/postgres/migrate'
import { loginFailureLogContract } from '../auth/login-failures.contract'
import { freshDatabase } from '../helpers/postgres'

// Two pools on one database: two instances, one budget.
loginFailureLogContract('PostgreSQL, two instances', async () => {
  const database = await freshDatabase()
  const pools = [new SQL(database.url, { max: 8 }), new SQL(database.url, { max: 8 })] as const
  await runPgMigrations(pools[0])
  return {
    log: new PgLoginFailures(pools[0]),
    other: new PgLoginFailures(pools[1]),
    async [Symbol.asyncDispose]() {
      await Promise.all(pools.map((pool) => pool.close()))
      await database[Symbol.asyncDispose]()
    },
  }
})
