import { exportLines } from '../users/transfer'
import { configFlags, type FlagSpec, parseFlags, serveFlags } from './args'
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
  ...serveFlags('data-dir'),
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
    try {
      for (const line of exportLines(deps.users.exportAll(), chosen, withHashes === true)) {
        writer.write(line)
        count += 1
      }
      await writer.flush()
    } catch (error) {
      // The reader went away (`| head`): stop quietly, as Unix tools do.
      if ((error as { code?: string }).code === 'EPIPE') return 0
      throw error
    }
    const users = chosen === 'csv' ? count - 1 : count
    console.error(`exported ${users.toLocaleString('en-US')} users (${chosen})`)
    return 0
  })
}
