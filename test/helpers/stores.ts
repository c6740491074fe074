import { type Backend, openBackend } from '../../src/backends/index'
import { type Deps, makeDeps } from '../../src/deps'
import { memoryLogger } from '../../src/log'
import { ManualClock } from '../../src/timers'
import { TEST_BACKEND, testData } from './app'

/**
 * Two instances of roster's stores on one database of the run's backend, composed as the
 * server composes them (deps.ts): on PostgreSQL two pools, as two instances have; on SQLite one
 * process per file, so `b` is `a`. The store contract suites (test/stores/) run their cases,
 * races included, on whichever backend the run is on: `npm test` SQLite, `npm run
 * test:postgres` PostgreSQL. A new backend passes by passing them.
 */
export async function twoInstances(clock?: ManualClock) {
  const data = await testData()
  const open = () =>
    clock === undefined
      ? makeDeps(data.config, memoryLogger(), undefined, { env: data.env })
      : makeDeps(data.config, memoryLogger(), clock.date, { env: data.env, timers: clock })
  let a: Deps
  let b: Deps
  try {
    a = await open()
    b = TEST_BACKEND === 'postgres' ? await open() : a
  } catch (error) {
    await data[Symbol.asyncDispose]()
    throw error
  }
  return {
    a,
    b,
    backend: TEST_BACKEND,
    async [Symbol.asyncDispose]() {
      await a.close()
      if (b !== a) await b.close()
      await data[Symbol.asyncDispose]()
    },
  }
}

/** An outcome's error code, or 'ok' (for races of two writes). */
export const codeOf = (outcome: PromiseSettledResult<unknown>) =>
  outcome.status === 'fulfilled'
    ? 'ok'
    : ((outcome.reason as { errorCode?: string }).errorCode ?? 'error')

/**
 * Two opened backends (every store's rows, no rules on top) on one database of the run's
 * backend, for the contract suites of interfaces a backend implements alone (upload records,
 * the webhook inbox): on PostgreSQL two pools; on SQLite `b` is `a`.
 */
export async function twoBackends(clock: ManualClock = new ManualClock(Date.now())) {
  const data = await testData()
  const options = { now: clock.date, clock: clock.now, log: memoryLogger(), onCommit: () => {} }
  let a: Backend
  let b: Backend
  try {
    a = await openBackend(data.config, options)
    b = TEST_BACKEND === 'postgres' ? await openBackend(data.config, options) : a
  } catch (error) {
    await data[Symbol.asyncDispose]()
    throw error
  }
  return {
    a,
    b,
    clock,
    async [Symbol.asyncDispose]() {
      await a.close()
      if (b !== a) await b.close()
      await data[Symbol.asyncDispose]()
    },
  }
}
