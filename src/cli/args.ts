import { parseArgs } from 'node:util'
import { ConfigError, SERVE_OPTIONS } from '../config'

export interface FlagSpec {
  flag: string
  env: readonly string[]
  defaultText: string
  help: string
  /** Boolean flags take no value. */
  boolean?: boolean
  /** The value may be left out: the flag alone means `true`. */
  optionalValue?: boolean
  /** How --help names the value (else from the flag's name). */
  valueName?: string
  /** May be given more than once; the values come as a list. */
  multiple?: boolean
}

export type Flags = Record<string, string | boolean | string[] | undefined>

/** The server options as flag specs, for commands that take some of them. */
/** The flags of every command that opens the database: where its data and its files are. */
/** `--json`: a listing as JSON instead of columns. */
export const JSON_FLAG: FlagSpec = {
  flag: 'json',
  env: [],
  defaultText: 'false',
  help: 'print JSON',
  boolean: true,
}

export const databaseFlags = (): FlagSpec[] =>
  serveFlags('data-dir', 'database-url', 'prepared-statements', 'storage', 'storage-timeout')

export const serveFlags = (...names: string[]): FlagSpec[] =>
  SERVE_OPTIONS.filter((spec) => names.length === 0 || names.includes(spec.flag))

/**
 * Parses a command's flags strictly: an unknown flag, a missing value or a stray argument is
 * a ConfigError with one readable line.
 */
export function parseFlags(
  command: string,
  args: string[],
  specs: readonly FlagSpec[],
  positionals = 0,
): { flags: Flags; positionals: string[] } {
  const options: Record<
    string,
    { type: 'string' | 'boolean'; short?: string; multiple?: boolean }
  > = {
    help: { type: 'boolean', short: 'h' },
  }
  for (const spec of specs) {
    options[spec.flag] = {
      type: spec.boolean ? 'boolean' : 'string',
      ...(spec.multiple ? { multiple: true } : {}),
    }
  }
  try {
    const parsed = parseArgs({
      args: withOptionalValues(args, specs),
      options,
      strict: true,
      allowPositionals: positionals > 0,
    })
    if (parsed.positionals.length > positionals) {
      throw new ConfigError(
        `unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`,
      )
    }
    return { flags: parsed.values as Flags, positionals: parsed.positionals }
  } catch (error) {
    if (error instanceof ConfigError) throw error
    throw new ConfigError(`${describeParseError(error)} (see roster ${command} --help)`)
  }
}

/**
 * `--trust-proxy` with nothing after it, or another flag, is `--trust-proxy=true`; followed by a
 * value it takes that value.
 */
function withOptionalValues(args: string[], specs: readonly FlagSpec[]): string[] {
  const optional = new Set(
    specs.filter((spec) => spec.optionalValue).map((spec) => `--${spec.flag}`),
  )
  return args.map((arg, i) => {
    const next = args[i + 1]
    return optional.has(arg) && (next === undefined || next.startsWith('-')) ? `${arg}=true` : arg
  })
}

function describeParseError(error: unknown): string {
  const { code, message } = error as { code?: string; message: string }
  const flag = /'(-[^']*)'/.exec(message)?.[1]
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown flag ${flag ?? ''}`.trim()
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return flag ? `${flag} needs a value` : (message.split('\n')[0] ?? message)
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${/'([^']*)'/.exec(message)?.[1] ?? ''}`.trim()
    default:
      return message.split('\n')[0] ?? message
  }
}

/** The flags loadConfig reads (everything but --help and a command's repeatable flags). */
export function configFlags(flags: Flags): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {}
  for (const [key, value] of Object.entries(flags)) {
    if (key !== 'help' && value !== undefined && !Array.isArray(value)) out[key] = value
  }
  return out
}

const HELP_WIDTH = 96

/** `--flag VALUE   help (env X; default Y)` entries, aligned and wrapped. */
export function renderFlags(specs: readonly FlagSpec[]): string {
  const left = specs.map((spec) => {
    if (spec.boolean) return `  --${spec.flag}`
    if (spec.multiple) return `  --${spec.flag} <${valueName(spec)}>…`
    return spec.optionalValue
      ? `  --${spec.flag} [${valueName(spec)}]`
      : `  --${spec.flag} <${valueName(spec)}>`
  })
  const width = Math.max(...left.map((text) => text.length)) + 2
  return specs
    .map((spec, i) => {
      const env = spec.env.length > 0 ? `env ${spec.env.join(', then ')}; ` : ''
      const fallback =
        spec.defaultText === '(required)' ? 'required' : `default ${spec.defaultText}`
      const lines = wrap(`${spec.help} (${env}${fallback})`, HELP_WIDTH - width)
      return lines
        .map((line, j) => (j === 0 ? (left[i] ?? '') : '').padEnd(width) + line)
        .join('\n')
    })
    .join('\n')
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else {
      line = line === '' ? word : `${line} ${word}`
    }
  }
  return [...lines, line]
}

function valueName(spec: FlagSpec): string {
  return spec.valueName ?? spec.flag.replace(/^.*-/, '').toUpperCase()
}
