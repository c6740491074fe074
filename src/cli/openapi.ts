import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../app'
import { testConfig } from '../config'
import { makeDeps } from '../deps'
import { createLogger } from '../log'
import { parseFlags } from './args'

export const OPENAPI_HELP = () => `Usage: roster openapi

Prints the OpenAPI 3 document (the one served at /swagger/json) on stdout.`

/** `roster openapi`: builds the app over a throw-away data dir and prints its document. */
export async function run(args: string[]): Promise<number> {
  const { flags } = parseFlags('openapi', args, [])
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
