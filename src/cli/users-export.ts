import type { ExportedUser } from '../users/records'
import { exportChunks, type LeftOut } from '../users/transfer'
import { configFlags, databaseFlags, type FlagSpec, parseFlags } from './args'
import { FORMAT_FLAG, parseFormat, withDeps } from './users-common'

export const EXPORT_FLAGS: FlagSpec[] = [
  FORMAT_FLAG,
  {
    flag: 'with-password-hashes',
    env: [],
    defaultText: 'false',
    help: 'add a password_hash column, so users keep their passwords when imported into another roster (treat the file like the database)',
    boolean: true,
  },
  ...databaseFlags(),
]

/** `roster users export`: every user to standard output, from one snapshot. */
export async function exportUsers(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const { flags } = parseFlags('users', args, EXPORT_FLAGS)
  const { format, 'with-password-hashes': withHashes, ...serverFlags } = configFlags(flags)
  const chosen = parseFormat(format, 'jsonl')
  return await withDeps(serverFlags, env, async (deps) => {
    const writer = Bun.stdout.writer({ highWaterMark: 1 << 20 })
    let count = 0
    const leftOut: LeftOut = { groups: 0, scim: 0 }
    async function* counted(): AsyncGenerator<readonly ExportedUser[]> {
      for await (const batch of deps.users.exportAll()) {
        count += batch.length
        yield batch
      }
    }
    try {
      const options = { passwordHashes: withHashes === true, scimProfiles: true }
      for await (const chunk of exportChunks(counted(), chosen, options, leftOut)) {
        writer.write(chunk)
      }
      await writer.flush()
    } catch (error) {
      // The reader went away (`| head`): stop quietly, as Unix tools do.
      if ((error as { code?: string }).code === 'EPIPE') return 0
      throw error
    }
    console.error(`exported ${count.toLocaleString('en-US')} users (${chosen})`)
    warnLeftOut(leftOut)
    return 0
  })
}

/** A CSV export says what it could not carry, and how to carry it. */
function warnLeftOut(leftOut: LeftOut): void {
  const parts = [
    leftOut.groups > 0 ? `the groups of ${leftOut.groups} user(s)` : null,
    leftOut.scim > 0 ? `the SCIM profiles of ${leftOut.scim} user(s)` : null,
  ].filter((part) => part !== null)
  if (parts.length === 0) return
  console.error(
    `roster: warning: CSV cannot carry ${parts.join(' or ')}; they are not in this file (export with --format jsonl to move them)`,
  )
}
