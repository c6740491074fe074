import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

// The import rule (docs/ARCHITECTURE.md), checked over the import graph of src/: dependencies
// point one way, from the composition root down to the base, and never in a circle.

const ROOT = join(import.meta.dir, '../..')
const SRC = join(ROOT, 'src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'/gm

/** file (relative to src, without extension) → the src modules it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of sourceFiles(SRC)) {
    const from = moduleName(file)
    const targets: string[] = []
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const specifier = (match[1] ?? match[2]) as string
      if (specifier.endsWith('.css')) continue
      const target = moduleName(normalize(join(dirname(file), specifier)))
      // Files outside src that Bun embeds (package.json, the migrations' SQL) are not modules.
      if (!target.startsWith('..')) targets.push(target)
    }
    graph.set(from, targets)
  }
  return graph
}

const moduleName = (path: string) => relative(SRC, path).replace(/\.tsx?$/, '')

const graph = importGraph()

/** The modules a rule is about: a folder of src, or one file. */
const inside = (module: string, places: readonly string[]) =>
  places.some((place) => module === place || module.startsWith(`${place}/`))

/** Modules at the bottom: they may import one another, nothing above them. */
const BASE = [
  'errors',
  'db',
  'storage',
  'timers',
  'log',
  'build-info',
  'config',
  'config-values',
  'text',
]
/** The composition root: it alone may import app, server and main. */
const ROOT_MODULES = ['app', 'server', 'main', 'cli']

function violations(rule: (from: string, to: string) => boolean): string[] {
  const found: string[] = []
  for (const [from, targets] of graph) {
    for (const to of targets) if (rule(from, to)) found.push(`${from} → ${to}`)
  }
  return found
}

describe('the import rule', () => {
  test('the graph is read (a broken reader would pass every rule)', () => {
    expect(graph.size).toBeGreaterThan(80)
    expect(graph.get('app')).toContain('users/routes')
  })

  test('no cycles', () => {
    const cycles: string[] = []
    const state = new Map<string, 'open' | 'done'>()
    const visit = (module: string, path: string[]) => {
      if (state.get(module) === 'done') return
      if (state.get(module) === 'open') {
        cycles.push([...path.slice(path.indexOf(module)), module].join(' → '))
        return
      }
      state.set(module, 'open')
      for (const next of graph.get(module) ?? []) visit(next, [...path, module])
      state.set(module, 'done')
    }
    for (const module of graph.keys()) visit(module, [])
    expect(cycles).toEqual([])
  })

  test('the base (errors, db, storage, timers, log, config) imports nothing above it', () => {
    expect(violations((from, to) => inside(from, BASE) && !inside(to, BASE))).toEqual([])
  })

  test('only the composition root imports app, server or main', () => {
    expect(
      violations(
        (from, to) => inside(to, ['app', 'server', 'main']) && !inside(from, ROOT_MODULES),
      ),
    ).toEqual([])
  })

  test('only the composition root imports deps (each route module is given what it uses)', () => {
    expect(violations((from, to) => to === 'deps' && !inside(from, ROOT_MODULES))).toEqual([])
  })

  test('routes are imported by the composition root alone', () => {
    const isRoutes = (module: string) => /(^|\/|-)routes$/.test(module)
    expect(
      violations((from, to) => isRoutes(to) && !inside(from, ROOT_MODULES) && from !== to),
    ).toEqual([])
  })

  test('stores and services know nothing of HTTP', () => {
    const isStore = (module: string) =>
      /(^|\/)(sqlite-[a-z-]+|pg-[a-z-]+|store|records|inbox|service|worker|handlers)$/.test(module)
    expect(
      violations((from, to) => isStore(from) && (inside(to, ['http']) || /routes$/.test(to))),
    ).toEqual([])
  })

  test('no feature imports the account routes (they sit above auth and users)', () => {
    expect(
      violations(
        (from, to) => inside(to, ['account']) && !inside(from, ['account', ...ROOT_MODULES]),
      ),
    ).toEqual([])
  })

  test('the console’s browser code and the server never import each other', () => {
    expect(
      violations((from, to) => inside(from, ['console/ui']) !== inside(to, ['console/ui'])),
    ).toEqual([])
  })

  test('auth does not reach into users (users routes use auth, not the other way)', () => {
    expect(violations((from, to) => inside(from, ['auth']) && inside(to, ['users']))).toEqual([])
  })
})
