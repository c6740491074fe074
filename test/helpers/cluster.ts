import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../../scripts/postgres-server'
import { tempDir } from './app'
import { cleanEnv, type RunningBinary, requireBinary, startBinary } from './binary'
import { freshDatabase } from './postgres'
import { freshStorage } from './s3'

export const MISSING_HAPROXY = 'haproxy is not installed: apt-get install -y haproxy'

export const MISSING_NGINX = 'nginx is not installed: apt-get install -y nginx'

const README = join(import.meta.dir, '../../docs/several-instances.md')

/** the docs' fenced `lang` block: the balancer configuration users copy. */
export function readmeConfig(lang: 'haproxy' | 'nginx'): string {
  const match = new RegExp(`\`\`\`${lang}\n([\\s\\S]*?)\`\`\``).exec(readFileSync(README, 'utf8'))
  if (match?.[1] === undefined) throw new Error(`docs/several-instances.md has no ${lang} block`)
  return match[1]
}

/**
 * the docs' example addresses moved onto loopback: its listening port 80 becomes `listen`, and
 * its server line (10.0.0.11:8080) is repeated once per port in `ports`.
 */
function onLoopback(config: string, listen: number, ports: number[]): string {
  const lines = config.split('\n')
  const servers = lines.filter((line) => /\b10\.0\.0\.\d+:8080\b/.test(line))
  const template = servers[0]
  if (template === undefined)
    throw new Error('docs/several-instances.md: the configuration names no server')
  const local = ports.map((port, i) =>
    template
      .replace(/10\.0\.0\.\d+:8080/, `127.0.0.1:${port}`)
      .replace(/roster\d+ /, `roster${i + 1} `),
  )
  return lines
    .flatMap((line) => (line === template ? local : servers.includes(line) ? [] : [line]))
    .join('\n')
    .replace(/^(\s*bind) 10\.0\.0\.10:80\b/m, `$1 127.0.0.1:${listen}`)
    .replace(/^(\s*listen) 10\.0\.0\.10:80;/m, `$1 127.0.0.1:${listen};`)
}

/**
 * the docs' haproxy configuration for instances on `ports`. `balance source` (the docs') keeps
 * each client IP on one instance; tests whose load comes from one address and must reach every
 * instance ask for `roundrobin` instead, the one line they change.
 */
export function haproxyConfig(listen: number, ports: number[], balance: 'source' | 'roundrobin') {
  const config = onLoopback(readmeConfig('haproxy'), listen, ports)
  if (!/^\s*balance source\b/m.test(config)) throw new Error('docs haproxy: no balance source')
  return config.replace(/^(\s*balance) source\b/m, `$1 ${balance}`)
}

/**
 * the docs' nginx configuration for instances on `ports`, inside the main context a server
 * package's nginx.conf would give it (pid, logs and temp files in `dir`).
 */
export function nginxConfig(listen: number, ports: number[], dir: string): string {
  return `${process.getuid?.() === 0 ? 'user root;\n' : ''}pid ${dir}/nginx.pid;
worker_processes 1;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/client-body;
  proxy_temp_path ${dir}/proxy;
${onLoopback(readmeConfig('nginx'), listen, ports)}
}
`
}

/** Starts the balancer on `listen` with the docs' configuration (its config and log in `dir`). */
export function startBalancer(
  kind: 'haproxy' | 'nginx',
  listen: number,
  ports: number[],
  dir: string,
  balance: 'source' | 'roundrobin',
) {
  const configPath = join(dir, `${kind}.conf`)
  // Its log goes to a file (a pipe nobody reads would fill and stall it), kept for a failure.
  const log = Bun.file(join(dir, `${kind}.log`))
  if (kind === 'haproxy') {
    writeFileSync(configPath, haproxyConfig(listen, ports, balance))
    return Bun.spawn(['haproxy', '-f', configPath, '-db'], { stdio: ['ignore', 'ignore', log] })
  }
  writeFileSync(configPath, nginxConfig(listen, ports, dir))
  return Bun.spawn(['nginx', '-p', dir, '-e', 'stderr', '-c', configPath, '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', log],
  })
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
 * behind haproxy (or nginx) on loopback, configured as docs/several-instances.md shows. Without the balancer: one
 * line saying what to install.
 */
export async function startCluster(
  options: {
    count?: number
    /** Which balancer, with the docs' configuration (default haproxy). */
    balancer?: 'haproxy' | 'nginx'
    /** haproxy only: the docs' `source`, or `roundrobin` (the default, to spread one client's load). */
    balance?: 'source' | 'roundrobin'
    flags?: string[]
    env?: Record<string, string>
    /** A database of the test's own (a server it stops and starts); else a fresh one. */
    databaseUrl?: string
    /** A bucket of the test's own (a server it stops and starts); else a prefix in the shared one. */
    bucket?: { storage: { bucket: string; prefix: string }; env: Record<string, string> }
  } = {},
): Promise<Cluster> {
  requireBinary()
  const balancer = options.balancer ?? 'haproxy'
  if (Bun.which(balancer) === null) {
    throw new Error(balancer === 'haproxy' ? MISSING_HAPROXY : MISSING_NGINX)
  }
  const database =
    options.databaseUrl === undefined
      ? await freshDatabase()
      : { url: options.databaseUrl, [Symbol.asyncDispose]: async () => {} }
  const { storage, env: s3env } = options.bucket ?? (await freshStorage())
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
  const proxy = startBalancer(balancer, listen, ports, dir.path, options.balance ?? 'roundrobin')
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
      // SIGTERM: nginx's master stops its workers first (killed outright, they would live on).
      proxy.kill('SIGTERM')
      await proxy.exited
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
