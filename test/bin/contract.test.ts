// Property-based contract test: for every operation the OpenAPI document lists (HEAD and OPTIONS
// included), fast-check generates requests from the document itself (path parameters from the
// records that exist and from made-up ids, query parameters, headers and bodies from their
// schemas, examples among them) and sends them to the compiled binary. Every answer must be
// documented for its operation, match the schema given for its status, and never be a 5xx.
// ROSTER_CONTRACT_SEED replays a run; ROSTER_CONTRACT_RUNS sets the requests per operation.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import fc from 'fast-check'
import { tempDir } from '../helpers/app'
import {
  cleanEnv,
  type RunningBinary,
  requireBinary,
  runBinary,
  startBinary,
} from '../helpers/binary'
import { type Answer, DocumentChecker, type OpenApiDoc } from '../helpers/openapi'
import { arbitraryOf, type Schema } from '../helpers/schema-arbitrary'

setDefaultTimeout(300_000)

const RUNS = Number(process.env.ROSTER_CONTRACT_RUNS ?? 12)
const SEED = Number(process.env.ROSTER_CONTRACT_SEED ?? Date.now() % 1_000_000)
const METHODS = ['get', 'head', 'options', 'post', 'put', 'patch', 'delete']

const dir = tempDir('roster-contract-')
let server: RunningBinary
// biome-ignore lint/suspicious/noExplicitAny: the parsed document, walked freely
let doc: any
let checker: DocumentChecker
let key: string
/** Ids of records that exist, by the path segment that names them. */
const pools: Record<string, string[]> = {}

const api = async (path: string, body?: unknown, method = 'POST') => {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return response.json() as Promise<Record<string, unknown>>
}

beforeAll(async () => {
  requireBinary()
  const dataDir = join(dir.path, 'data')
  const made = await runBinary(['keys', 'create', '--name', 'contract', '--data-dir', dataDir])
  key = made.stdout.trim()
  server = await startBinary(['--data-dir', dataDir, '--webhook-allow-private'], {
    env: cleanEnv({ ROSTER_WEBHOOK_SECRET: 'whsec_contract' }),
  })
  doc = await (await fetch(`${server.url}/openapi.json`)).json()
  checker = new DocumentChecker(doc as OpenApiDoc)
  // Records to aim at; the generated requests may change or delete them, which is fine.
  const users = await Promise.all(
    ['ada', 'alan', 'grace'].map((name) =>
      api('/users', { name, email: `${name}@example.com`, password: 'correct horse' }),
    ),
  )
  const group = await api('/groups', { name: 'Engineering' })
  const upload = await (
    await fetch(`${server.url}/upload?filename=a.txt&public=true`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/octet-stream' },
      body: 'hello',
    })
  ).json()
  const endpoint = await api('/webhook-endpoints', {
    url: 'http://127.0.0.1:9/hook',
    events: ['*'],
  })
  // Keys the requests may revoke: never the one they all carry (id 1).
  const spare = await Promise.all(['spare-1', 'spare-2'].map((name) => api('/api-keys', { name })))
  const userIds = users.map((user) => String(user.id))
  Object.assign(pools, {
    users: userIds,
    members: userIds,
    Users: userIds,
    groups: [String(group.id)],
    Groups: [String(group.id)],
    uploads: [String(upload.id)],
    files: [String(upload.files[0].id)],
    'webhook-endpoints': [String(endpoint.id)],
    'api-keys': spare.map((made) => String(made.id)),
    audit: ['1', '2'],
    mail: ['1'],
    deliveries: ['1'],
    events: ['1'],
    passkeys: ['1'],
    ResourceTypes: ['User', 'Group'],
    Schemas: [
      'urn:ietf:params:scim:schemas:core:2.0:User',
      'urn:ietf:params:scim:schemas:core:2.0:Group',
    ],
  })
})

afterAll(async () => {
  await server?.stop()
  dir[Symbol.dispose]()
})

interface Generated {
  path: string
  query: [string, string][]
  headers: Record<string, string>
  body: { type: string; data: BodyInit } | null
  anonymous: boolean
}

const resolve = (ref: string): Schema =>
  doc.components.schemas[ref.replace('#/components/schemas/', '')] as Schema

/** A path parameter: an id that exists (mostly), else a made-up one. */
function parameterArbitrary(path: string, name: string): fc.Arbitrary<string> {
  const segments = path.split('/')
  const owner = segments[segments.indexOf(`{${name}}`) - 1] ?? ''
  const known = pools[owner] ?? []
  const madeUp = fc.oneof(
    fc.integer({ min: 100_000, max: 999_999 }).map(String),
    fc.string({ minLength: 1, maxLength: 12 }),
  )
  return known.length === 0
    ? madeUp.map(encodeURIComponent)
    : fc
        .oneof(
          { arbitrary: fc.constantFrom(...known), weight: 3 },
          { arbitrary: madeUp, weight: 1 },
        )
        .map(encodeURIComponent)
}

function bodyArbitrary(operation: Schema): fc.Arbitrary<Generated['body']> {
  const requestBody = operation.requestBody as Schema | undefined
  if (requestBody === undefined) return fc.constant(null)
  const choices = Object.entries(requestBody.content as Record<string, Schema>).map(
    ([type, media]) => {
      if (type === 'application/octet-stream' || type === 'multipart/form-data') {
        return fc.uint8Array({ maxLength: 64 }).map((bytes) => encodeBinary(type, bytes))
      }
      return arbitraryOf(media.schema ?? {}, resolve).map((value) => encodeValue(type, value))
    },
  )
  const body = fc.oneof(...choices)
  return requestBody.required === true ? body : fc.option(body, { nil: null })
}

function encodeBinary(type: string, bytes: Uint8Array): NonNullable<Generated['body']> {
  const copy = new Uint8Array(bytes) // an ArrayBuffer of its own, as fetch and Blob take
  if (type === 'application/octet-stream') return { type, data: copy }
  const form = new FormData()
  form.append('file', new Blob([copy]), 'generated.bin')
  return { type: '', data: form }
}

function encodeValue(type: string, value: unknown): NonNullable<Generated['body']> {
  if (type === 'application/x-www-form-urlencoded') {
    const entries = Object.entries((value ?? {}) as Record<string, unknown>).map(
      ([name, field]) => [name, typeof field === 'string' ? field : JSON.stringify(field)],
    )
    return { type, data: new URLSearchParams(entries).toString() }
  }
  return { type, data: JSON.stringify(value) }
}

function requestArbitrary(path: string, operation: Schema): fc.Arbitrary<Generated> {
  const parameters = (operation.parameters ?? []) as Schema[]
  const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name as string)
  const pathArb = fc
    .tuple(...inPath.map((name) => parameterArbitrary(path, name)))
    .map((values) =>
      inPath.reduce((built, name, i) => built.replace(`{${name}}`, values[i] as string), path),
    )
  const queryArb = fc
    .tuple(
      ...parameters
        .filter((parameter) => parameter.in === 'query')
        .map((parameter) =>
          fc.option(
            arbitraryOf(parameter.schema ?? {}, resolve).map(
              (value) => [parameter.name, String(value)] as [string, string],
            ),
            { nil: null },
          ),
        ),
    )
    .map((pairs) => pairs.filter((pair) => pair !== null) as [string, string][])
  const headersArb = fc
    .tuple(
      ...parameters
        .filter((parameter) => parameter.in === 'header' && parameter.name !== 'Last-Event-ID')
        .map((parameter) =>
          fc.option(
            fc
              .oneof(
                fc.constant('"1.1"'),
                fc.constant('*'),
                fc.string({ minLength: 1, maxLength: 20 }),
              )
              .map((value) => [parameter.name, value] as const),
            { nil: null },
          ),
        ),
    )
    .map((pairs) => Object.fromEntries(pairs.filter((pair) => pair !== null) as [string, string][]))
  return fc.record({
    path: pathArb,
    query: queryArb,
    headers: headersArb,
    body: bodyArbitrary(operation),
    anonymous: fc.boolean().map((coin) => coin && Math.random() < 0.2),
  })
}

async function send(method: string, generated: Generated): Promise<Answer> {
  const url = new URL(`${server.url}${generated.path}`)
  for (const [name, value] of generated.query) url.searchParams.append(name, value)
  const headers: Record<string, string> = { ...generated.headers }
  if (!generated.anonymous) headers['x-api-key'] = key
  if (generated.body !== null && generated.body.type !== '') {
    headers['content-type'] = generated.body.type
  }
  const controller = new AbortController()
  const response = await fetch(url, {
    method,
    headers,
    body: generated.body?.data ?? null,
    signal: controller.signal,
    redirect: 'manual',
  })
  const contentType = response.headers.get('content-type')
  // A live feed never ends: its status and type are the answer.
  if (contentType?.startsWith('text/event-stream')) {
    controller.abort()
    return { status: response.status, contentType, body: null }
  }
  const text = await response.text()
  let body: unknown = text
  // JSON answers are parsed (not JSON Lines, application/x-ndjson, which is text).
  if (/^application\/(?:[\w.+-]+\+)?json\b/.test(contentType ?? '') && text !== '') {
    body = JSON.parse(text)
  }
  return { status: response.status, contentType, body }
}

describe('every operation of the OpenAPI document, with requests generated from it (fast-check)', () => {
  test(`answers as documented: ${RUNS} generated requests per operation against the binary, seed ${SEED}`, async () => {
    const operations = Object.entries(doc.paths as Record<string, Record<string, Schema>>).flatMap(
      ([path, item]) =>
        METHODS.filter((method) => item[method] !== undefined).map(
          (method) => [path, method, item[method] as Schema] as const,
        ),
    )
    expect(operations.length).toBeGreaterThan(300)
    const problems: string[] = []
    const statuses = new Map<string, Set<number>>()
    for (const [path, method, operation] of operations) {
      const outcome = await fc.check(
        fc.asyncProperty(requestArbitrary(path, operation), async (generated) => {
          const answer = await send(method.toUpperCase(), generated)
          const seen = statuses.get(`${method} ${path}`) ?? new Set()
          seen.add(answer.status)
          statuses.set(`${method} ${path}`, seen)
          const problem = checker.check(method.toUpperCase(), generated.path, answer)
          if (problem !== null) throw new Error(problem)
          if (answer.status >= 500)
            throw new Error(`${method} ${generated.path} → ${answer.status}`)
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      )
      if (outcome.failed) {
        problems.push(
          `${method} ${path}: ${String(outcome.errorInstance)} (counterexample ${JSON.stringify(outcome.counterexample)})`,
        )
      }
    }
    expect(problems).toEqual([])
    // The generated requests reach the handlers, not only the validators: most operations
    // answered with a success at least once.
    const succeeded = [...statuses.values()].filter((seen) => [...seen].some((s) => s < 300))
    console.info(
      `contract: ${operations.length} operations, ${succeeded.length} answered a success at least once (seed ${SEED})`,
    )
    expect(succeeded.length / operations.length).toBeGreaterThan(0.5)
  })
})
