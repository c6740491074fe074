// The README and docs/ run as written. Every `sh` block of README.md and then of each page of
// docs/, in the order the README's table lists them, runs in one fresh `sh` session started in
// the repository (the reader's clone) with no ROSTER_ variables, no npm variables and no
// node_modules/.bin on its PATH: nothing is prepared behind the reader's back. The README's
// first block builds the binary, puts it on the PATH and moves to an empty folder; every block
// after it runs there, against the server it started. A `bash` block runs with bash. A failing
// command, or any answer carrying roster's error envelope, fails the test.
import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { tempDir } from '../helpers/app'
import { cleanEnv } from '../helpers/binary'

setDefaultTimeout(300_000)

const ROOT = join(import.meta.dir, '../..')
/** The port the README's examples use; the test needs it free, as the reader's machine has it. */
const PORT = 8080

export interface Block {
  page: string
  lang: 'sh' | 'bash'
  code: string
}

/** A page's `sh` and `bash` blocks, in order (other languages are shown, not run). */
export function runnableBlocks(page: string, markdown: string): Block[] {
  return [...markdown.matchAll(/^```(sh|bash)\n([\s\S]*?)^```$/gm)].map((match) => ({
    page,
    lang: match[1] as 'sh' | 'bash',
    code: match[2] as string,
  }))
}

/** docs/ pages in the order the README's table of contents links them. */
export function pagesInReadmeOrder(readme: string): string[] {
  const linked = [...readme.matchAll(/^\| \[[^\]]+\]\((docs\/[\w.-]+\.md)\)/gm)].map(
    (match) => match[1],
  )
  return [...new Set(linked as string[])]
}

/** One session: sh blocks as they are; a bash block through bash, in the same folder. */
function sessionScript(blocks: readonly Block[]): string {
  return [
    'set -e',
    ...blocks.map((block, n) => {
      const label = `echo "--- ${block.page}, block ${n + 1}" >&2`
      if (block.lang === 'sh') return `${label}\n${block.code}`
      return `${label}\nbash -e <<'ROSTER_README_BASH_BLOCK'\n${block.code}ROSTER_README_BASH_BLOCK`
    }),
  ].join('\n')
}

/** A shell as a reader opens one: their PATH without this project's tools, no npm or roster settings. */
function freshShellEnv(tmp: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(cleanEnv())) {
    if (!key.startsWith('npm_') && !key.startsWith('BUN_')) env[key] = value
  }
  env.PATH = (env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules/.bin') && !dir.includes('/.bun/'))
    .join(':')
  // mktemp -d (the README's empty folder) lands in the test's own folder, removed afterwards.
  env.TMPDIR = tmp
  return env
}

function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
const pages = pagesInReadmeOrder(readme)

describe('the README', () => {
  test('links every page of docs/ from its table of contents', () => {
    const onDisk = readdirSync(join(ROOT, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`)
    expect([...pages].sort()).toEqual(onDisk.sort())
  })

  test('is a front door: under 400 lines, with the first five minutes in its first 120', () => {
    const lines = readme.split('\n')
    expect(lines.length).toBeLessThan(400)
    const firstFive = lines.indexOf('## Your first five minutes')
    const blockEnd = lines.findIndex((line, i) => i > firstFive + 2 && line === '```')
    expect(firstFive).toBeGreaterThan(0)
    expect(blockEnd).toBeLessThan(120)
  })

  test('its blocks need no bash where they say sh (no <<<, no [[ ]], no arrays)', () => {
    const blocks = [readme, ...pages.map((page) => readFileSync(join(ROOT, page), 'utf8'))]
      .flatMap((markdown, i) =>
        runnableBlocks(i === 0 ? 'README.md' : (pages[i - 1] as string), markdown),
      )
      .filter((block) => block.lang === 'sh')
    const bashisms = blocks.filter((block) => /<<<|\[\[|\bdeclare\b|=\(/.test(block.code))
    expect(bashisms.map((block) => block.page)).toEqual([])
  })
})

describe('the README and docs/ run as written', () => {
  const dir = tempDir('roster-readme-')
  let session: ReturnType<typeof Bun.spawn> | null = null
  afterAll(async () => {
    // The README's server runs in the background of the session: stop its whole group.
    if (session !== null) {
      try {
        process.kill(-session.pid, 'SIGTERM')
      } catch {}
      await Bun.sleep(500)
      try {
        process.kill(-session.pid, 'SIGKILL')
      } catch {}
    }
    dir[Symbol.dispose]()
  })

  test('every sh block, in order, in one fresh shell: each command succeeds and no answer is an error', async () => {
    if (await portInUse(PORT)) {
      throw new Error(
        `port ${PORT} is in use: the README's examples serve on it; stop what listens there`,
      )
    }
    const blocks = [
      ...runnableBlocks('README.md', readme),
      ...pages.flatMap((page) => runnableBlocks(page, readFileSync(join(ROOT, page), 'utf8'))),
    ]
    expect(blocks.length).toBeGreaterThanOrEqual(15)
    await Bun.write(join(dir.path, 'session.sh'), sessionScript(blocks))
    session = Bun.spawn(['sh', join(dir.path, 'session.sh')], {
      cwd: ROOT,
      env: freshShellEnv(dir.path),
      stdout: 'pipe',
      stderr: 'pipe',
      detached: true,
    })
    const [stdout, stderr, code] = await Promise.all([
      new Response(session.stdout as ReadableStream).text(),
      new Response(session.stderr as ReadableStream).text(),
      session.exited,
    ])
    const lastBlock = stderr.match(/--- .*, block \d+/g)?.at(-1) ?? 'before the first block'
    expect({ code, at: code === 0 ? '' : `${lastBlock}\n${stderr.slice(-2500)}` }).toEqual({
      code: 0,
      at: '',
    })
    // An answer with roster's error envelope means an example no longer does what it says.
    const errors = stdout.match(/\{"error":\{"code":"[A-Z_]+"[^\n]{0,200}/g) ?? []
    expect(errors).toEqual([])

    // The examples did what they say.
    expect(stdout).toContain('"status":"ok"')
    expect(stdout).toContain('"email":"grace@example.com"') // the README's signed webhook made her
    expect(stdout).toContain('hello from roster') // the README's private upload, read back by its owner
    expect(stdout).toMatch(/^idempotent-replayed: true/im)
    expect(stdout).toMatch(/HTTP\/1\.1 304/)
    expect(stdout).toContain('"authenticated":true')
    expect(stdout).toContain('"revoked":true')
    expect(stdout).toContain('"received":true')
    const [folder] = readdirSync(dir.path).filter((name) => name.startsWith('tmp.'))
    expect(folder).toBeDefined()
    const demo = join(dir.path, folder as string)
    expect(readFileSync(join(demo, 'copy.png'))).toEqual(readFileSync(join(demo, 'photo.png')))
    expect(readFileSync(join(demo, 'part.bin')).byteLength).toBe(16)
  })
})
