import { loadConfig } from '../config'
import { isLoopbackHost } from '../config-values'
import { VERSION } from '../deps'
import { createLogger } from '../log'
import { startServer } from '../server'
import { configFlags, parseFlags, renderFlags, serveFlags } from './args'

export const SERVE_HELP = () => `Usage: roster serve [flags]

Starts the HTTP server. Flags beat environment variables beat defaults.

${renderFlags(serveFlags())}

Environment only (kept out of process listings):
  ROSTER_WEBHOOK_SECRET   webhook signing secret(s), comma-separated while rotating; without
                          one, every webhook delivery is refused (400)

SIGTERM or SIGINT stops it gracefully: no new connections, in-flight requests finish
(10 s at most), logs are flushed and the database is closed; the exit code is 0.`

/** `roster serve`: runs until SIGTERM or SIGINT. */
export async function run(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const { flags } = parseFlags('serve', args, serveFlags())
  if (flags.help) {
    console.log(SERVE_HELP())
    return 0
  }
  const config = loadConfig(configFlags(flags), env)
  const log = createLogger()
  const server = await startServer(config, log)
  const rate = config.rateLimit === null ? 'off' : `${config.rateLimit}/s`
  const { database, storage } = server.deps.describe
  log.info(
    `roster ${VERSION} listening on ${server.url}; database ${database}; uploads ${storage}; /users ${config.usersAccess}; sync ${config.sync}; rate limit ${rate}`,
    {
      version: VERSION,
      address: server.url,
      data_dir: config.dataDir,
      database,
      uploads: storage,
      users_access: config.usersAccess,
      sync: config.sync,
      rate_limit: rate,
    },
  )
  if (config.webhookSecrets.length === 0) {
    log.warn(
      'ROSTER_WEBHOOK_SECRET is not set: every webhook delivery will be refused with 400 INVALID_SIGNATURE',
    )
  }
  if (config.publicUrl === null && !isLoopbackHost(config.host)) {
    log.warn(
      `listening on ${config.host} without --public-url: Link headers and documentation_url are built from each request's Host header, which any client can set; behind a proxy or on a network, set --public-url to the address clients use`,
    )
  }
  if (config.usersAccess === 'open' && !isLoopbackHost(config.host)) {
    log.warn(
      `listening on ${config.host} with /users open (asked for by name): anyone who can reach this address can read and change every user; only requests to localhost or the --public-url host are answered; drop --users-access open to require credentials`,
    )
  }
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'))
    process.once('SIGINT', () => resolve('SIGINT'))
  })
  log.info(`${signal} received, shutting down`)
  process.once('SIGINT', () => process.exit(130))
  await server.stop()
  log.info('stopped')
  return 0
}
