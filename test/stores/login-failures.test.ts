import { twoBackends } from '../helpers/stores'
import { loginFailureLogContract } from './login-failures.contract'

// The login failure log's contract, on the run's backend: on SQLite the process's own log (one
// server per file), on PostgreSQL the shared table seen from two instances, one budget.
loginFailureLogContract('the backend’s log (two instances where it is shared)', async () => {
  const env = await twoBackends()
  return {
    log: env.a.loginFailures,
    other: env.b.loginFailures,
    [Symbol.asyncDispose]: () => env[Symbol.asyncDispose](),
  }
})
