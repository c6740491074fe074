import { BackupError } from './backends/sqlite/backup'
import { StorageOpenError } from './backends/storage'
import { versionLine } from './build-info'
import * as serve from './cli/serve'
import { ConfigError } from './config'
import { CopyError, DatabaseOpenError } from './db/errors'
import { DataDirError, VERSION } from './deps'
import { ServerStartError } from './server'
import { ImportFileError } from './users/import-records'

const HELP = () => `roster ${VERSION}: a users API with credentials, uploads and signed webhooks,
in one executable.

Usage: roster [command] [flags]

Commands:
  serve      start the server (the default when no command is given)
  migrate    apply the embedded database migrations and exit
  openapi    print the OpenAPI document
  keys       create, list or revoke API keys (roster keys --help)
  users      create, import or export users (roster users --help)
  mail       show the mail outbox (roster mail --help)
  audit      show the audit log, or follow it (roster audit --help)
  backup     write a consistent copy of the live database to a file
  copy       move a SQLite roster into PostgreSQL (and its files into S3): roster copy --help

Flags:
  -h, --help     show help (also after a command: roster serve --help)
  --version      print the version, the commit, the build date and the target

${serve.SERVE_HELP().replace(/^Usage: .*\n\n/, '')}`

type Command = (args: string[], env: Record<string, string | undefined>) => number | Promise<number>

/**
 * Each command's module, loaded when it runs: the binary evaluates only what the command uses
 * (the build splits the bundle), so `serve` starts without the import, export and copy code.
 */
const COMMANDS: Record<string, () => Promise<{ run: Command }>> = {
  serve: () => Promise.resolve(serve),
  migrate: () => import('./cli/migrate'),
  openapi: () => import('./cli/openapi'),
  keys: () => import('./cli/keys'),
  users: () => import('./cli/users'),
  mail: () => import('./cli/mail'),
  audit: () => import('./cli/audit'),
  backup: () => import('./cli/backup'),
  copy: () => import('./cli/copy'),
}

/** Failures a user can act on: one line, no stack. */
const EXPECTED = [
  ConfigError,
  DataDirError,
  DatabaseOpenError,
  ServerStartError,
  StorageOpenError,
  BackupError,
  ImportFileError,
  CopyError,
]

export async function main(
  argv: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const [first, ...rest] = argv
  if (first === '--version' || first === '-v') {
    console.log(versionLine())
    return 0
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    console.log(HELP())
    return 0
  }
  const isCommand = first !== undefined && !first.startsWith('-')
  const name = isCommand ? first : 'serve'
  const command = COMMANDS[name]
  if (command === undefined) {
    console.error(`roster: unknown command ${JSON.stringify(name)} (see roster --help)`)
    return 2
  }
  try {
    const { run } = await command()
    return await run(isCommand ? rest : argv, env)
  } catch (error) {
    const expected = EXPECTED.some((kind) => error instanceof kind)
    console.error(`roster: ${expected ? (error as Error).message : describeUnexpected(error)}`)
    return error instanceof ConfigError ? 2 : 1
  }
}

function describeUnexpected(error: unknown): string {
  return `unexpected failure: ${error instanceof Error ? error.message : String(error)}`
}

if (import.meta.main) {
  // Exit explicitly: signal listeners (serve) would otherwise keep the event loop alive.
  process.exit(await main(process.argv.slice(2), process.env))
}
