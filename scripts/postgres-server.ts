// A throwaway PostgreSQL server for tests and benchmarks: initdb in a temp dir, started with
// pg_ctl on a free loopback port (through `runuser -u postgres` when run as root: initdb refuses
// root), trust authentication on loopback only, stopped and removed by `stop()`.
// Needs Debian's `postgresql` package; without it, one line saying so.
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string
  port: number
  dataDir: string
  /** pg_ctl with the server's data dir, run as the right user (restart, stop -m …). */
  ctl(args: string[]): void
  stop(): void
}

export const MISSING_POSTGRES =
  'PostgreSQL is not installed: apt-get install -y postgresql (Debian), or set ROSTER_TEST_DATABASE_URL'

/** The folder of initdb and pg_ctl: Debian keeps them under /usr/lib/postgresql/<major>/bin. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const majors = readdirSync(root)
      .filter((name) => existsSync(join(root, name, 'bin/pg_ctl')))
      .sort((a, b) => Number(b) - Number(a))
    if (majors[0] !== undefined) return join(root, majors[0], 'bin')
  }
  const pgCtl = Bun.which('pg_ctl')
  return pgCtl === null ? null : join(pgCtl, '..')
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

/**
 * Starts a server. `durable: false` (the default for tests) turns fsync off: a test server's
 * data is thrown away, and the suites run several times faster. Fault tests ask for `true`.
 */
export async function startPostgres(
  options: {
    durable?: boolean
    /** Stop and remove the server when this process ends, however it ends (a watchdog). */
    reapWith?: number
  } = {},
): Promise<PostgresServer> {
  const bin = postgresBinDir()
  if (bin === null) throw new Error(MISSING_POSTGRES)
  const asRoot = process.getuid?.() === 0
  const base = mkdtempSync(join(tmpdir(), 'roster-pg-'))
  const dataDir = join(base, 'data')
  if (asRoot) {
    const ids = Bun.spawnSync(['id', '-u', 'postgres'])
    const gids = Bun.spawnSync(['id', '-g', 'postgres'])
    if (ids.exitCode !== 0) throw new Error(`${MISSING_POSTGRES} (no postgres user)`)
    chownSync(base, Number(ids.stdout.toString()), Number(gids.stdout.toString()))
    chmodSync(base, 0o700)
  }
  const run = (command: string[]) => {
    const full = asRoot ? ['runuser', '-u', 'postgres', '--', ...command] : command
    const result = Bun.spawnSync(full, { stdout: 'pipe', stderr: 'pipe' })
    if (result.exitCode !== 0) {
      throw new Error(`${command[0]} failed: ${result.stderr.toString().trim().split('\n').at(-1)}`)
    }
  }
  run([
    join(bin, 'initdb'),
    '-D',
    dataDir,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C',
  ])
  const port = await freePort()
  const settings = [
    `-p ${port}`,
    "-c listen_addresses='127.0.0.1'",
    `-c unix_socket_directories='${base}'`,
    '-c max_connections=200',
    ...(options.durable === true ? [] : ['-c fsync=off', '-c synchronous_commit=off']),
  ].join(' ')
  const ctl = (args: string[]) =>
    run([join(bin, 'pg_ctl'), '-D', dataDir, '-o', settings, '-l', join(base, 'log'), ...args])
  ctl(['-w', 'start'])
  if (options.reapWith !== undefined) {
    // A detached shell that outlives us: when the process is gone, the server goes too.
    const stopCommand = `${asRoot ? 'runuser -u postgres -- ' : ''}${join(bin, 'pg_ctl')} -D '${dataDir}' -m immediate stop`
    Bun.spawn(
      [
        'sh',
        '-c',
        `while kill -0 ${options.reapWith} 2>/dev/null; do sleep 1; done; ${stopCommand} >/dev/null 2>&1; rm -rf '${base}'`,
      ],
      { stdio: ['ignore', 'ignore', 'ignore'], detached: true },
    ).unref()
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    ctl,
    stop() {
      try {
        ctl(['-m', 'immediate', 'stop'])
      } catch {}
      rmSync(base, { recursive: true, force: true })
    },
  }
}
