import { MemoryLoginFailures } from '../../src/auth/limiter'
import { loginFailureLogContract } from './login-failures.contract'

// One process: the two limiters of the contract share one log, as two requests in one server do.
loginFailureLogContract('in memory (SQLite, one process)', async () => {
  const log = new MemoryLoginFailures()
  return { log, other: log, [Symbol.asyncDispose]: async () => {} }
})
