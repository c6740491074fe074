// Builds the roster executable with the options every build uses (npm run build, npm run
// release): bytecode and ESM (pitfall 3 in the stack notes), whitespace and syntax minifying
// only (identifier minifying breaks Elysia), a source map, no .env or bunfig.toml read at run
// time, and the build's commit, date and target compiled in for `roster --version`.
// Usage: bun scripts/build.ts [--target bun-linux-arm64] [--outfile dist/roster]
import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { ASSETS_MODULE, assetsModule, bundleConsole } from './build-console'

const root = join(import.meta.dir, '..')

export const BUILD_FLAGS = [
  '--compile',
  '--bytecode',
  '--format=esm',
  // A module imported with import() is loaded when it is first imported, not at start: serve
  // starts without the other commands, PostgreSQL's and S3's code or the OpenAPI generator.
  '--splitting',
  '--minify-whitespace',
  '--minify-syntax',
  '--sourcemap',
  '--no-compile-autoload-dotenv',
  '--no-compile-autoload-bunfig',
] as const

/** The target Bun builds for when none is named: this machine's. */
export function hostTarget(): string {
  return `bun-${process.platform}-${process.arch}`
}

/** The short commit of the work tree (with -dirty when it has changes), or `unknown`. */
export function gitCommit(): string {
  const head = Bun.spawnSync(['git', 'rev-parse', '--short=12', 'HEAD'], { cwd: root })
  if (head.exitCode !== 0) return 'unknown'
  const status = Bun.spawnSync(['git', 'status', '--porcelain', '--untracked-files=no'], {
    cwd: root,
  })
  const dirty = status.stdout.toString().trim() !== ''
  return `${head.stdout.toString().trim()}${dirty ? '-dirty' : ''}`
}

/** Where a build leaves the source maps of an executable's chunks (not shipped). */
export const mapsOf = (outfile: string) => `${outfile}.maps`

/** Builds one executable; throws with bun's output when the build fails. */
export function build(options: {
  target?: string
  outfile: string
  commit?: string
  date?: string
}) {
  const target = options.target ?? hostTarget()
  const info = {
    commit: options.commit ?? gitCommit(),
    date: options.date ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    target,
  }
  // The split bundle writes a source map per chunk beside the executable: built in a folder of
  // its own, the executable is moved to its place and the maps into `<outfile>.maps/`.
  mkdirSync(dirname(options.outfile), { recursive: true })
  const scratch = mkdtempSync(join(dirname(options.outfile), '.build-'))
  const command = [
    process.execPath,
    'build',
    join(root, 'src/main.ts'),
    ...BUILD_FLAGS,
    `--target=${target}`,
    `--define=ROSTER_BUILD=${JSON.stringify(info)}`,
    '--outfile',
    join(scratch, basename(options.outfile)),
  ]
  try {
    const result = Bun.spawnSync(command, { cwd: root, stdout: 'pipe', stderr: 'pipe' })
    if (result.exitCode !== 0) {
      throw new Error(
        `bun build for ${target} failed:\n${result.stdout.toString()}${result.stderr.toString()}`,
      )
    }
    renameSync(join(scratch, basename(options.outfile)), options.outfile)
    rmSync(mapsOf(options.outfile), { recursive: true, force: true })
    renameSync(scratch, mapsOf(options.outfile))
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
  return info
}

/**
 * The binary embeds src/console/assets.gen.ts: refuse to build from a stale one (checked once
 * per build command, not once per target).
 */
export async function assertConsoleCurrent() {
  const fresh = assetsModule(await bundleConsole())
  const committed = await Bun.file(ASSETS_MODULE)
    .text()
    .catch(() => '')
  if (committed !== fresh) {
    throw new Error(
      'src/console/assets.gen.ts does not match src/console/ui: run `bun run console:build`',
    )
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: { target: { type: 'string' }, outfile: { type: 'string', default: 'dist/roster' } },
  })
  await assertConsoleCurrent()
  const info = build({ target: values.target, outfile: resolve(root, values.outfile) })
  console.log(`built ${values.outfile} (${info.target}, commit ${info.commit})`)
}
