import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../app'
import { loadConfig, testConfig } from '../config'
import { makeDeps } from '../deps'
import { createLogger } from '../log'
import { databaseFlags, parseFlags, renderFlags, serveFlags } from './args'

/** The address `roster serve` listens on by default. */
const DEFAULT_SERVER = 'http://127.0.0.1:8080'

const PUBLIC_URL = serveFlags('public-url').map((spec) => ({
  ...spec,
  defaultText: 'http://127.0.0.1:8080',
  help: 'the server address the document names (its servers entry)',
}))
const FLAGS = [...PUBLIC_URL, ...databaseFlags()]

export const OPENAPI_HELP = () => `Usage: roster openapi [flags]

Prints the OpenAPI 3 document (the one served at /openapi.json) on stdout. The document is
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
    const given = flags['public-url']
    const publicUrl =
      typeof given === 'string' ? loadConfig({ 'public-url': given }, {}).publicUrl : DEFAULT_SERVER
    const deps = await makeDeps(testConfig({ dataDir, publicUrl }), createLogger())
    const response = await createApp(deps).handle(new Request('http://localhost/openapi.json'))
    console.log(JSON.stringify(await response.json(), null, 2))
    await deps.close()
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
  return 0
}
