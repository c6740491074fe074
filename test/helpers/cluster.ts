import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../../scripts/postgres-server'
import { tempDir } from './app'
import { cleanEnv, type RunningBinary, requireBinary, startBinary } from './binary'
import { freshDatabase } from './postgres'
import { freshStorage } from './s3'

export const MISSING_HAPROXY = 'haproxy is not installed: apt-get install -y haproxy'

/**
 * The balancer configuration the README shows, for instances on `ports`. `balance source`
 * keeps each client IP on one instance (the per-instance rate limit then holds as one budget);
 * health checks take a dead instance out within two seconds; only requests that never reached
 * an instance are retried elsewhere (a write is never sent twice); request bodies are streamed,
 * not buffered.
 */
export function haproxyConfig(listen: number, ports: number[], balance: 'source' | 'roundrobin') {
  return `global
  maxconn 2000

defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  retries 2
  option redispatch
  retry-on conn-failure

frontend roster
  bind 127.0.0.1:${listen}
  option forwardfor
  default_backend instances

backend instances
  balance ${balance}
  hash-type consistent
  option httpchk GET /health
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1
${ports.map((port, i) => `  server roster${i + 1} 127.0.0.1:${port} check`).join('\n')}
`
}

export interface Cluster extends AsyncDisposable {
  /** The balancer's URL. */
  url: string
  /** Each instance's own URL. */
  instances: RunningBinary[]
  databaseUrl: string
  /** The flags every instance runs with. */
  flags: string[]
  /** What a CLI command (keys, users, migrate) needs to reach the same database. */
  cliFlags: string[]
  env: Record<string, string>
  /** SIGKILLs instance i. */
  kill(i: number): Promise<void>
  /** Starts instance i again on its port. */
  restart(i: number): Promise<void>
}

/**
 * Two (or `count`) roster binaries on one fresh PostgreSQL database and one bucket prefix,
 * behind haproxy on loopback. Without haproxy: one line saying what to install.
 */
export async function startCluster(
  options: {
    count?: number
    balance?: 'source' | 'roundrobin'
    flags?: string[]
    env?: Record<string, string>
    /** A database of the test's own (a server it stops and starts); else a fresh one. */
    databaseUrl?: string
  } = {},
): Promise<Cluster> {
  requireBinary()
  if (Bun.which('haproxy') === null) throw new Error(MISSING_HAPROXY)
  const database =
    options.databaseUrl === undefined
      ? await freshDatabase()
      : { url: options.databaseUrl, [Symbol.asyncDispose]: async () => {} }
  const { storage, env: s3env } = await freshStorage()
  const dir = tempDir('roster-cluster-')
  const env = cleanEnv({ ...s3env, ...options.env })
  const flags = [
    '--database-url',
    database.url,
    '--storage',
    `s3://${storage.bucket}/${storage.prefix}`,
    '--trust-proxy',
    ...(options.flags ?? []),
  ]
  const count = options.count ?? 2
  const ports = await Promise.all(Array.from({ length: count }, () => freePort()))
  const start = (i: number) => {
    const dataDir = join(dir.path, `instance${i + 1}`)
    mkdirSync(dataDir, { recursive: true })
    return startBinary([...flags, '--data-dir', dataDir], { env, port: ports[i] })
  }
  const instances = await Promise.all(ports.map((_, i) => start(i)))
  const listen = await freePort()
  const configPath = join(dir.path, 'haproxy.cfg')
  writeFileSync(configPath, haproxyConfig(listen, ports, options.balance ?? 'roundrobin'))
  const haproxy = Bun.spawn(['haproxy', '-f', configPath, '-db'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const url = `http://127.0.0.1:${listen}`
  await until(async () => (await fetch(`${url}/health`).catch(() => null))?.status === 200)
  const cluster: Cluster = {
    url,
    instances,
    databaseUrl: database.url,
    flags,
    cliFlags: ['--database-url', database.url, '--data-dir', join(dir.path, 'cli')],
    env,
    async kill(i) {
      await instances[i]?.stop('SIGKILL')
    },
    async restart(i) {
      instances[i] = await start(i)
    },
    async [Symbol.asyncDispose]() {
      haproxy.kill('SIGKILL')
      await Promise.all(instances.map((instance) => instance.stop('SIGKILL').catch(() => 0)))
      await database[Symbol.asyncDispose]()
      dir[Symbol.dispose]()
    },
  }
  return cluster
}

/** Polls until `check` holds (10 s at most). */
export async function until(check: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await Bun.sleep(50)
  }
}
