import { resolve } from 'node:path'
import {
  ConfigError,
  GIB,
  invalid,
  isLoopbackHost,
  MIB,
  oneOf,
  parseBoolean,
  parseDuration,
  parseIntegerIn,
  parseOrigins,
  parseRate,
  parseSecrets,
  parseShortDuration,
  parseSize,
  parseTimeout,
  parseTrustProxy,
} from './config-values'

/** Everything the server reads from flags and the environment, parsed once at the edge. */
export interface Config {
  readonly host: string
  readonly port: number
  readonly dataDir: string
  /** A postgres:// URL: the database is PostgreSQL (several instances may share it); null: SQLite. */
  readonly databaseUrl: string | null
  /** Named prepared statements on PostgreSQL (off behind transaction-mode poolers). */
  readonly databasePrepare: boolean
  /** `s3://BUCKET[/PREFIX]`: uploads in an S3-compatible bucket; null: DATA_DIR/uploads. */
  readonly storage: { readonly bucket: string; readonly prefix: string } | null
  /** The longest wait (ms) for one request to the bucket that moves file bytes. */
  readonly storageTimeout: number
  readonly publicUrl: string | null
  readonly logFile: string | null
  readonly sync: 'full' | 'normal'
  readonly corsOrigins: '*' | readonly string[]
  /** Origins besides --public-url's that may use passkeys (WebAuthn's expected origins). */
  readonly webauthnOrigins: readonly string[]
  readonly usersAccess: 'open' | 'protected'
  readonly cookieSecure: boolean
  /** Which proxies' X-Forwarded-For and X-Forwarded-Proto are believed; null: none. */
  readonly trustProxy: TrustProxy
  readonly maxFileSize: number
  readonly maxFiles: number
  readonly maxUploadSize: number
  /** Live feed streams (GET /events) this instance holds open at once, in all. */
  readonly maxEventStreams: number
  /** The same for one API key, or one user with all its sessions and tokens. */
  readonly maxEventStreamsPerCredential: number
  /** Requests a second per client IP (bursts of as many), or null when off. */
  readonly rateLimit: number | null
  /** How long received webhook events are kept (ms) before the housekeeping deletes them. */
  readonly webhookRetention: number
  /** How long audit events are kept (ms) before the housekeeping deletes them. */
  readonly auditRetention: number
  /** Outbound webhooks may go to any address, not only global unicast ones (tests, a LAN). */
  readonly webhookAllowPrivate: boolean
  /** How long a failing outbound delivery is retried (ms) before its endpoint is disabled. */
  readonly webhookRetryWindow: number
  /** ROSTER_WEBHOOK_SECRET, comma-separated (several during a rotation); environment only. */
  readonly webhookSecrets: readonly string[]
  /** smtp[s]://user:pass@host:port: where mail goes; null keeps it in the outbox. */
  readonly smtpUrl: string | null
  /** How long one message's send may take in all (ms): then the connection is dropped. */
  readonly smtpTimeout: number
  /** The From of every message. */
  readonly mailFrom: string
  /** A directory whose templates replace the embedded ones, file by file; null: none. */
  readonly mailTemplates: string | null
  /** Sign-in is refused until the account's address is verified. */
  readonly requireVerifiedEmail: boolean
  /** SCIM may set the passwords of the accounts it provisioned (Okta's password sync). */
  readonly scimPasswords: boolean
}

/**
 * --trust-proxy: the number of proxies in front of roster (their entries at the end of
 * X-Forwarded-For are theirs), or their addresses (IPs and CIDR ranges).
 */
export type TrustProxy = { readonly hops: number } | { readonly proxies: readonly string[] } | null

export { ConfigError, parseSize }

/** `--storage-timeout`'s default: the longest wait for one request that moves file bytes. */
export const DEFAULT_STORAGE_TIMEOUT_MS = 30_000

type Env = Record<string, string | undefined>

interface OptionSpec<K extends keyof Config> {
  key: K
  flag: string
  env: readonly string[]
  /**
   * The value used when neither flag nor env is given (it may depend on the options listed
   * before it), and how --help shows it.
   */
  fallback: (earlier: Partial<Config>) => Config[K]
  /** A flag without a value (its presence means true); the env var takes true/false. */
  boolean?: true
  /** A flag whose value may be left out (`--trust-proxy` alone means `--trust-proxy=true`). */
  optionalValue?: true
  /** How --help names the value. */
  valueName?: string
  defaultText: string
  help: string
  parse: (text: string, source: string) => Config[K]
}

const option = <K extends keyof Config>(spec: OptionSpec<K>) => spec

/** The server's options, in the order --help lists them. */
export const SERVE_OPTIONS = [
  option({
    key: 'host',
    fallback: () => '127.0.0.1',
    flag: 'host',
    env: ['ROSTER_HOST'],
    defaultText: '127.0.0.1',
    help: 'address to listen on (0.0.0.0 for every interface)',
    parse: (text, source) => {
      if (!/^[A-Za-z0-9.:[\]-]{1,253}$/.test(text)) throw invalid(source, text, 'a host name or IP')
      return text
    },
  }),
  option({
    key: 'port',
    fallback: () => 8080,
    flag: 'port',
    env: ['ROSTER_PORT', 'PORT'],
    defaultText: '8080',
    help: 'TCP port (0 picks a free one)',
    parse: (text, source) => parseIntegerIn(text, source, 0, 65535),
  }),
  option({
    key: 'dataDir',
    fallback: () => resolve('data'),
    flag: 'data-dir',
    env: ['ROSTER_DATA_DIR'],
    defaultText: './data',
    help: 'directory holding roster.db and uploads/',
    parse: (text) => resolve(text),
  }),
  option({
    key: 'databaseUrl',
    fallback: () => null,
    flag: 'database-url',
    env: ['ROSTER_DATABASE_URL'],
    defaultText: '(SQLite in the data directory)',
    help: 'postgres://user:password@host:port/database: use PostgreSQL, which several roster instances can share',
    parse: parseDatabaseUrl,
  }),
  option({
    key: 'databasePrepare',
    fallback: () => true,
    flag: 'prepared-statements',
    env: ['ROSTER_PREPARED_STATEMENTS'],
    defaultText: 'on',
    help: 'on or off: PostgreSQL prepared statements (off behind a transaction-mode pooler such as PgBouncer or Supavisor)',
    parse: (text, source) => oneOf(text, source, ['on', 'off'] as const) === 'on',
  }),
  option({
    key: 'storage',
    fallback: () => null,
    flag: 'storage',
    env: ['ROSTER_STORAGE'],
    defaultText: '(DATA_DIR/uploads)',
    help: 's3://BUCKET[/PREFIX]: keep uploads in an S3-compatible bucket (endpoint, region and credentials from S3_* or AWS_* variables)',
    parse: parseStorage,
  }),
  option({
    key: 'storageTimeout',
    fallback: () => DEFAULT_STORAGE_TIMEOUT_MS,
    flag: 'storage-timeout',
    env: ['ROSTER_STORAGE_TIMEOUT'],
    defaultText: '30s',
    help: 'with --storage s3://…: the longest wait for one request to the bucket that moves file bytes (a part of an upload, a chunk of a download); deletes and other small requests wait at most 10 s, or this if shorter (such as 30s, 2m)',
    parse: parseTimeout,
  }),
  option({
    key: 'publicUrl',
    fallback: () => null,
    flag: 'public-url',
    env: ['ROSTER_PUBLIC_URL'],
    defaultText: '(the request host)',
    help: 'external base URL used in links and documentation_url, e.g. https://api.example.com',
    parse: (text, source) => {
      let url: URL
      try {
        url = new URL(text)
      } catch {
        throw invalid(source, text, 'an absolute http(s) URL')
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw invalid(source, text, 'an absolute http(s) URL')
      }
      return url.origin + url.pathname.replace(/\/+$/, '')
    },
  }),
  option({
    key: 'logFile',
    fallback: () => null,
    flag: 'log-file',
    env: ['ROSTER_LOG_FILE'],
    defaultText: '(stdout)',
    help: 'append the JSON access log to this file instead of stdout',
    parse: (text) => resolve(text),
  }),
  option({
    key: 'sync',
    fallback: () => 'full' as const,
    flag: 'sync',
    env: ['ROSTER_SYNC'],
    defaultText: 'full',
    help: 'full: every answered write survives power loss; normal: faster writes, but a power cut may lose the last moments of writes (a crash of roster alone loses nothing)',
    parse: (text, source) => oneOf(text, source, ['full', 'normal'] as const),
  }),
  option({
    key: 'corsOrigins',
    fallback: () => '*' as const,
    flag: 'cors-origins',
    env: ['ROSTER_CORS_ORIGINS'],
    defaultText: '*',
    help: 'comma-separated origins allowed to call with credentials; * allows any origin without credentials',
    parse: parseOrigins,
  }),
  option({
    key: 'webauthnOrigins',
    fallback: () => [],
    flag: 'webauthn-origins',
    env: ['ROSTER_WEBAUTHN_ORIGINS'],
    defaultText: '(none)',
    help: 'comma-separated origins besides --public-url that may register and use passkeys (sites under the same domain)',
    parse: (text, source) => {
      const origins = parseOrigins(text, source)
      if (origins === '*') throw invalid(source, text, 'origins such as https://app.example.com')
      return origins
    },
  }),
  option({
    key: 'usersAccess',
    // Open only where nobody else can reach it: a laptop's loopback address (section 11).
    fallback: (earlier) => (isLoopbackHost(earlier.host ?? '') ? 'open' : 'protected'),
    flag: 'users-access',
    env: ['ROSTER_USERS_ACCESS'],
    defaultText: 'open on a loopback --host, else protected',
    help: 'open: anyone may use /users (and only requests to localhost or the --public-url host are answered); protected: reads need a credential, writes an API key or the user itself',
    parse: (text, source) => oneOf(text, source, ['open', 'protected'] as const),
  }),
  option({
    key: 'maxFileSize',
    fallback: () => 100 * MIB,
    flag: 'max-file-size',
    env: ['ROSTER_MAX_FILE_SIZE'],
    defaultText: '100MiB',
    help: 'largest file in an upload (bytes, or with KiB, MiB, GiB)',
    parse: parseSize,
  }),
  option({
    key: 'maxFiles',
    fallback: () => 20,
    flag: 'max-files',
    env: ['ROSTER_MAX_FILES'],
    defaultText: '20',
    help: 'most files in one upload',
    parse: (text, source) => parseIntegerIn(text, source, 1, 10_000),
  }),
  option({
    key: 'maxUploadSize',
    fallback: () => GIB,
    flag: 'max-upload-size',
    env: ['ROSTER_MAX_UPLOAD_SIZE'],
    defaultText: '1GiB',
    help: 'most bytes of files in one upload (bytes, or with KiB, MiB, GiB)',
    parse: parseSize,
  }),
  option({
    key: 'maxEventStreams',
    fallback: () => 1000,
    flag: 'max-event-streams',
    env: ['ROSTER_MAX_EVENT_STREAMS'],
    defaultText: '1000',
    help: 'most live feed streams (GET /events) open at once on this instance (429 beyond)',
    parse: (text, source) => parseIntegerIn(text, source, 1, 1_000_000),
  }),
  option({
    key: 'maxEventStreamsPerCredential',
    fallback: () => 10,
    flag: 'max-event-streams-per-credential',
    env: ['ROSTER_MAX_EVENT_STREAMS_PER_CREDENTIAL'],
    defaultText: '10',
    help: 'most live feed streams open at once for one API key, or one user with all its sessions (429 beyond)',
    parse: (text, source) => parseIntegerIn(text, source, 1, 1_000_000),
  }),
  option({
    key: 'rateLimit',
    fallback: () => null,
    flag: 'rate-limit',
    env: ['ROSTER_RATE_LIMIT'],
    defaultText: 'off',
    help: 'N/s: at most N requests a second per client IP, in bursts of up to N (429 beyond; /health and /metrics are exempt)',
    parse: parseRate,
  }),
  option({
    key: 'webhookRetention',
    fallback: () => 90 * 24 * 60 * 60 * 1000,
    flag: 'webhook-retention',
    env: ['ROSTER_WEBHOOK_RETENTION'],
    defaultText: '90d',
    help: 'how long received webhook events are kept (such as 90d, 36h); older handled ones are deleted hourly. A sha256= delivery replayed after that is taken as new',
    parse: parseDuration,
  }),
  option({
    key: 'auditRetention',
    fallback: () => 90 * 24 * 60 * 60 * 1000,
    flag: 'audit-retention',
    env: ['ROSTER_AUDIT_RETENTION'],
    defaultText: '90d',
    help: 'how long audit events are kept (such as 90d, 365d); older ones are deleted hourly, in batches',
    parse: parseDuration,
  }),
  option({
    key: 'webhookAllowPrivate',
    fallback: () => false,
    boolean: true,
    flag: 'webhook-allow-private',
    env: ['ROSTER_WEBHOOK_ALLOW_PRIVATE'],
    defaultText: 'false',
    help: 'let webhook endpoints be on addresses that are not global unicast: loopback, private, link-local (a receiver on this machine or your network); without it such URLs are refused, when made and at every delivery',
    parse: parseBoolean,
  }),
  option({
    key: 'webhookRetryWindow',
    fallback: () => 3 * 24 * 60 * 60 * 1000,
    flag: 'webhook-retry-window',
    env: ['ROSTER_WEBHOOK_RETRY_WINDOW'],
    defaultText: '3d',
    help: 'how long a failing webhook delivery is retried, with backoff from 5 s to 6 h, before it fails and its endpoint is disabled (such as 3d, 12h, 90s)',
    parse: parseShortDuration,
  }),
  option({
    key: 'cookieSecure',
    fallback: () => false,
    boolean: true,
    flag: 'cookie-secure',
    env: ['ROSTER_COOKIE_SECURE'],
    defaultText: 'false (Secure only over TLS)',
    help: 'mark the session cookie Secure on every answer (for HTTPS behind a proxy without --trust-proxy)',
    parse: parseBoolean,
  }),
  option({
    key: 'trustProxy',
    fallback: () => null,
    optionalValue: true,
    valueName: 'N|ADDRESSES',
    flag: 'trust-proxy',
    env: ['ROSTER_TRUST_PROXY'],
    defaultText: 'off',
    help: 'believe X-Forwarded-For and X-Forwarded-Proto from the proxies in front of roster: alone, one (the client is the address the nearest proxy appended); N, that many; or their addresses and ranges, comma-separated (10.0.0.0/8,192.0.2.7). Never the entries a client writes',
    parse: parseTrustProxy,
  }),
  option({
    key: 'smtpUrl',
    fallback: () => null,
    flag: 'smtp-url',
    env: ['ROSTER_SMTP_URL'],
    defaultText: '(mail stays in the outbox)',
    help: 'smtp://user:password@host:587 (STARTTLS when the server offers it) or smtps://…:465 (TLS from the start): send mail through this server. Without it, mail waits in the outbox (roster mail list, the console)',
    parse: parseSmtpUrl,
  }),
  option({
    key: 'smtpTimeout',
    fallback: () => 45_000,
    flag: 'smtp-timeout',
    env: ['ROSTER_SMTP_TIMEOUT'],
    defaultText: '45s',
    help: 'how long the mail server has to take one message, every wait together (connecting, its greeting, each answer); then the connection is dropped and the message tried again later. On PostgreSQL a worker holds each message for this and a third more (60 s by default), so no other instance sends it meanwhile',
    parse: parseTimeout,
  }),
  option({
    key: 'mailFrom',
    fallback: (earlier) => `roster <no-reply@${mailHost(earlier.publicUrl ?? null)}>`,
    flag: 'mail-from',
    env: ['ROSTER_MAIL_FROM'],
    defaultText: 'roster <no-reply@HOST of --public-url>',
    help: 'the From of every message, an address or "Name <address>"',
    parse: (text, source) => {
      if (!/^(?:[^<>\r\n]*<[^<>\s@]+@[^<>\s@]+>|[^<>\s@]+@[^<>\s@]+)$/.test(text.trim())) {
        throw invalid(source, text, 'an address, or Name <address>')
      }
      return text.trim()
    },
  }),
  option({
    key: 'mailTemplates',
    fallback: () => null,
    flag: 'mail-templates',
    env: ['ROSTER_MAIL_TEMPLATES'],
    defaultText: '(the embedded ones)',
    help: 'a directory of mail templates (FLOW.subject.txt, FLOW.txt, FLOW.html) that replace the embedded ones file by file',
    parse: (text) => resolve(text),
  }),
  option({
    key: 'requireVerifiedEmail',
    fallback: () => false,
    boolean: true,
    flag: 'require-verified-email',
    env: ['ROSTER_REQUIRE_VERIFIED_EMAIL'],
    defaultText: 'false',
    help: 'refuse sign-in (403 EMAIL_NOT_VERIFIED) until the account has followed the link of POST /auth/verify-email/request',
    parse: parseBoolean,
  }),
  option({
    key: 'scimPasswords',
    fallback: () => false,
    boolean: true,
    flag: 'scim-passwords',
    env: ['ROSTER_SCIM_PASSWORDS'],
    defaultText: 'false',
    help: "let SCIM set the passwords of the accounts it provisioned (Okta's password sync); off, a SCIM password is 400 invalidValue",
    parse: parseBoolean,
  }),
] as const

/** The host mail says it comes from (its From, its Message-IDs): --public-url's, or localhost. */
export function mailHost(publicUrl: string | null): string {
  return publicUrl === null ? 'localhost' : new URL(publicUrl).hostname
}

/** smtp:// or smtps:// with a host; the password never appears in the error. */
function parseSmtpUrl(text: string, source: string): string {
  let url: URL | null = null
  try {
    url = new URL(text)
  } catch {}
  if (url === null || !/^smtps?:$/.test(url.protocol) || url.hostname === '') {
    throw new ConfigError(
      `invalid value for ${source}: expected smtp://user:password@host:587 or smtps://user:password@host:465`,
    )
  }
  return text
}

/** A postgres:// or postgresql:// URL with a host; the password never appears in the error. */
function parseDatabaseUrl(text: string, source: string): string {
  let url: URL | null = null
  try {
    url = new URL(text)
  } catch {}
  if (url === null || !/^postgres(ql)?:$/.test(url.protocol) || url.hostname === '') {
    throw new ConfigError(
      `invalid value for ${source}: expected postgres://user:password@host:port/database`,
    )
  }
  return text
}

/** `s3://BUCKET[/PREFIX]`, with S3's bucket naming rules and a prefix without empty segments. */
function parseStorage(text: string, source: string): Config['storage'] {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(text)
  const prefix = (match?.[2] ?? '').replace(/\/+$/, '')
  const segmentsOk = prefix === '' || prefix.split('/').every((part) => /^[\w.!*'()-]+$/.test(part))
  if (match?.[1] === undefined || !segmentsOk) {
    throw new ConfigError(`invalid value for ${source}: expected s3://BUCKET or s3://BUCKET/PREFIX`)
  }
  return { bucket: match[1], prefix }
}

export type OptionKey = (typeof SERVE_OPTIONS)[number]['key']

/**
 * Builds the config from parsed flags and the environment. Flags beat env vars beat defaults.
 * Throws ConfigError naming the flag or variable that holds a bad value.
 */
export function loadConfig(flags: Partial<Record<string, string | boolean>>, env: Env): Config {
  const values: Record<string, unknown> = {}
  for (const spec of SERVE_OPTIONS) {
    const fromFlag = flags[spec.flag]
    if (fromFlag !== undefined) {
      values[spec.key] =
        typeof fromFlag === 'boolean' ? fromFlag : spec.parse(fromFlag, `--${spec.flag}`)
      continue
    }
    const envName = spec.env.find((name) => env[name] !== undefined && env[name] !== '')
    values[spec.key] =
      envName !== undefined
        ? spec.parse(env[envName] as string, envName)
        : spec.fallback(values as Partial<Config>)
  }
  values.webhookSecrets = parseSecrets(env.ROSTER_WEBHOOK_SECRET)
  if (values.smtpUrl !== null && values.publicUrl === null) {
    throw new ConfigError(
      '--smtp-url needs --public-url: the links in mail must name the address people reach roster at',
    )
  }
  return Object.freeze(values) as unknown as Config
}

/** The config a test or an embedded use gets when it names only what it cares about. */
export function testConfig(overrides: Partial<Config> & { dataDir: string }): Config {
  const values: Record<string, unknown> = {}
  for (const spec of SERVE_OPTIONS) {
    values[spec.key] = spec.fallback({ ...values, ...overrides } as Partial<Config>)
  }
  return Object.freeze({ ...values, webhookSecrets: [], port: 0, ...overrides }) as Config
}
