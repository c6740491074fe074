import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

// The house (docs/ARCHITECTURE.md), checked over the import graph of src/: every module has a
// layer by its folder, imports only what its layer may, and reaches (through any chain of
// imports) nothing a lower layer must not know. A new folder has no layer until this file
// gives it one, so nothing escapes the rules by its name.

const ROOT = join(import.meta.dir, '../..')
const SRC = join(ROOT, 'src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gm

interface Module {
  /** The src modules it imports (relative to src, without extension). */
  imports: string[]
  /** The packages it imports (`elysia`, `bun:sqlite`, …). */
  packages: string[]
  /** The names it imports from the `bun` package. */
  fromBun: string[]
  text: string
}

const moduleName = (path: string) => relative(SRC, path).replace(/\.tsx?$/, '')

function readModules(): Map<string, Module> {
  const modules = new Map<string, Module>()
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8')
    const module: Module = { imports: [], packages: [], fromBun: [], text }
    for (const match of text.matchAll(IMPORT)) {
      const specifier = (match[1] ?? match[2]) as string
      if (specifier.endsWith('.css')) continue
      if (!specifier.startsWith('.')) {
        module.packages.push(specifier)
        if (specifier === 'bun') {
          const names = /\{([^}]*)\}/.exec(match[0])?.[1] ?? ''
          module.fromBun.push(...names.split(',').map((name) => name.replace('type', '').trim()))
        }
        continue
      }
      const target = moduleName(normalize(join(dirname(file), specifier)))
      // Files outside src that Bun embeds (package.json, the migrations' SQL) are not modules.
      if (!target.startsWith('..')) module.imports.push(target.replace(/\/index$/, '/index'))
    }
    modules.set(moduleName(file), module)
  }
  return modules
}

const modules = readModules()

/** Whether a module is one of these places: a folder of src, or one file. */
const inside = (module: string, places: readonly string[]) =>
  places.some((place) => module === place || module.startsWith(`${place}/`))

/**
 * The layers, top to bottom, each by its folders (or root files); the last place that names a
 * module wins, so `console/ui` is apart from `console`. A layer may import its own modules and
 * those of the layers it names.
 */
const LAYERS = {
  root: { places: ['main', 'server', 'app', 'deps', 'cli'], uses: 'everything' },
  routes: {
    places: ['routes'],
    uses: ['http', 'domain', 'drivers', 'base', 'assets'],
  },
  backends: { places: ['backends'], uses: ['domain', 'drivers', 'base'] },
  http: { places: ['http'], uses: ['base'] },
  domain: {
    places: [
      'audit',
      'auth',
      'users',
      'groups',
      'accounts',
      'mail',
      'uploads',
      'webhooks',
      'outbound',
      'scim',
      'factors',
      'idempotency',
      'health',
    ],
    uses: ['drivers', 'base'],
  },
  drivers: { places: ['storage', 'smtp', 'egress'], uses: ['base'] },
  base: {
    places: [
      'errors',
      'db',
      'metrics',
      'config',
      'config-values',
      'log',
      'timers',
      'text',
      'build-info',
      'own-keys',
    ],
    uses: [],
  },
  assets: { places: ['console'], uses: [] },
  browser: { places: ['console/ui'], uses: [] },
} as const satisfies Record<string, { places: readonly string[]; uses: 'everything' | string[] }>

type Layer = keyof typeof LAYERS

function layerOf(module: string): Layer | null {
  let found: { layer: Layer; length: number } | null = null
  for (const [layer, { places }] of Object.entries(LAYERS) as [
    Layer,
    { places: readonly string[] },
  ][]) {
    for (const place of places) {
      if (inside(module, [place]) && (found === null || place.length > found.length)) {
        found = { layer, length: place.length }
      }
    }
  }
  return found?.layer ?? null
}

const mayUse = (from: Layer, to: Layer): boolean => {
  if (from === to) return true
  const { uses } = LAYERS[from]
  return uses === 'everything' ? to !== 'browser' : (uses as readonly string[]).includes(to)
}

/** Every module a module reaches through any chain of imports (itself excluded). */
function reach(start: string): Set<string> {
  const seen = new Set<string>()
  const stack = [...(modules.get(start)?.imports ?? [])]
  while (stack.length > 0) {
    const next = stack.pop() as string
    if (seen.has(next)) continue
    seen.add(next)
    stack.push(...(modules.get(next)?.imports ?? []))
  }
  return seen
}

/** `from → to` for every edge the rule refuses. */
function edges(rule: (from: string, to: string) => boolean): string[] {
  const found: string[] = []
  for (const [from, { imports }] of modules) {
    for (const to of imports) if (rule(from, to)) found.push(`${from} → ${to}`)
  }
  return found
}

/** `from ⇢ reached` for every module a module must not reach, however indirectly. */
function reaches(from: (module: string) => boolean, forbidden: (module: string) => boolean) {
  const found: string[] = []
  for (const module of modules.keys()) {
    if (!from(module)) continue
    for (const reached of reach(module))
      if (forbidden(reached)) found.push(`${module} ⇢ ${reached}`)
  }
  return found
}

const packagesOf = (module: string) => modules.get(module)?.packages ?? []
const HTTP_PACKAGES = /^(elysia|@elysiajs\/|@sinclair\/typebox)/
const inLayer =
  (...layers: Layer[]) =>
  (module: string) =>
    layers.includes(layerOf(module) as Layer)

describe('the house', () => {
  test('the graph is read (a broken reader would pass every rule)', () => {
    expect(modules.size).toBeGreaterThan(120)
    expect(modules.get('app')?.imports).toContain('routes/users/routes')
    expect(packagesOf('backends/sqlite/connection')).toContain('bun:sqlite')
    expect(modules.get('backends/postgres/connection')?.fromBun).toContain('SQL')
  })

  test('every module has a layer by its folder', () => {
    expect([...modules.keys()].filter((module) => layerOf(module) === null)).toEqual([])
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
      for (const next of modules.get(module)?.imports ?? []) visit(next, [...path, module])
      state.set(module, 'done')
    }
    for (const module of modules.keys()) visit(module, [])
    expect(cycles).toEqual([])
  })

  test('each layer imports only its own and the layers below it', () => {
    expect(
      edges((from, to) => !mayUse(layerOf(from) as Layer, layerOf(to) as Layer)).map(
        (edge) => `${edge} (${edge.split(' → ').map(layerOf).join(' → ')})`,
      ),
    ).toEqual([])
  })

  test('stores, services and the base reach neither HTTP nor a database, however indirectly', () => {
    const lower = inLayer('domain', 'drivers', 'base')
    expect(reaches(lower, inLayer('http', 'routes', 'backends', 'root'))).toEqual([])
    const throughPackages = [...modules.keys()].filter(lower).flatMap((module) =>
      [module, ...reach(module)].flatMap((reached) =>
        packagesOf(reached)
          .filter((name) => HTTP_PACKAGES.test(name) || /sqlite|drizzle|postgres/.test(name))
          .map((name) => `${module} ⇢ ${reached} imports ${name}`),
      ),
    )
    expect(throughPackages).toEqual([])
  })

  test('only backends/sqlite imports bun:sqlite; only backends/postgres uses Bun.SQL', () => {
    const outside = (folder: string) => (module: string) => !inside(module, [folder])
    const sqlite = [...modules.keys()].filter(
      (module) =>
        outside('backends/sqlite')(module) &&
        packagesOf(module).some((name) => name === 'bun:sqlite' || name.includes('sqlite')),
    )
    const postgres = [...modules.keys()].filter(
      (module) =>
        outside('backends/postgres')(module) &&
        ((modules.get(module)?.fromBun ?? []).includes('SQL') ||
          /\bBun\.SQL\b/.test(modules.get(module)?.text ?? '') ||
          packagesOf(module).some((name) => /^drizzle-orm\/(bun-sql|pg-core)$/.test(name))),
    )
    expect({ sqlite, postgres }).toEqual({ sqlite: [], postgres: [] })
  })

  test('routes are reached only from the composition root and other routes', () => {
    expect(edges((from, to) => inLayer('routes')(to) && !inLayer('routes', 'root')(from))).toEqual(
      [],
    )
  })

  test('only the composition root imports app, server, main or deps', () => {
    expect(
      edges((from, to) => inside(to, ['app', 'server', 'main', 'deps']) && !inLayer('root')(from)),
    ).toEqual([])
  })

  test('no route module but the composition root imports the account routes', () => {
    expect(
      edges(
        (from, to) =>
          inside(to, ['routes/account']) &&
          !inside(from, ['routes/account']) &&
          !inLayer('root')(from),
      ),
    ).toEqual([])
  })

  test('auth never reaches users (users use auth, not the other way)', () => {
    expect(
      reaches(
        (m) => inside(m, ['auth']),
        (m) => inside(m, ['users']),
      ),
    ).toEqual([])
  })

  test('idempotency reaches no other feature', () => {
    const features = ['auth', 'users', 'uploads', 'webhooks', 'health']
    expect(
      reaches(
        (m) => inside(m, ['idempotency']),
        (m) => inside(m, features),
      ),
    ).toEqual([])
  })

  test('the console’s browser code and the server never import each other', () => {
    expect(
      edges((from, to) => inside(from, ['console/ui']) !== inside(to, ['console/ui'])),
    ).toEqual([])
  })
})
