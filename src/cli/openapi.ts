import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../app'
import { testConfig } from '../config'
import { makeDeps } from '../deps'
import { createLogger } from '../log'
import { databaseFlags, parseFlags, renderFlags } from './args'

const FLAGS = databaseFlags()

export const OPENAPI_HELP = () => `Usage: roster openapi [flags]

Prints the OpenAPI 3 document (the one served at /swagger/json) on stdout. The document is
the same whatever database or storage roster runs on; the flags every command takes are
accepted here too, so one set of flags works everywhere.

${renderFlags(FLAGS)}`

/** `roster openapi`: builds the app over a throw-away data dir and prints its document. */
export async function run(args: string[]): Promise<number> {
  const { flags } = parseFlags('openapi', args, FLAGS)
  if (flags.help) {
    console.log(OPENAPI_HELP())
    return 0
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'roster-openapi-'))
  try {
    const deps = await makeDeps(testConfig({ dataDir }), createLogger())
    const response = await createApp(deps).handle(new Request('http://localhost/swagger/json'))
    console.log(JSON.stringify(await response.json(), null, 2))
    await deps.close()
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
  return 0
}
