import { describe, setDefaultTimeout, test } from 'bun:test'
import { tempDir } from '../helpers/app'
import { cleanEnv, requireBinary } from '../helpers/binary'
import { sendWebhooksThroughTheBinary } from '../helpers/outbound-binary'
import { freshDatabase } from '../helpers/postgres'

setDefaultTimeout(120_000)

describe('outbound webhooks through the compiled binary (PostgreSQL)', () => {
  test('signed and in order; retried, resent by hand, kept across a restart; the endpoint disabled after its window', async () => {
    requireBinary()
    using dir = tempDir()
    await using database = await freshDatabase()
    const flags = ['--data-dir', dir.path, '--database-url', database.url]
    // A SIGKILL mid-delivery on PostgreSQL is test/postgres/audit-cluster.test.ts's (two instances).
    await sendWebhooksThroughTheBinary({
      serveFlags: flags,
      cliFlags: flags,
      env: cleanEnv(),
      killWhileHanging: false,
    })
  })
})
