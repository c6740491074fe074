import { type AnyElysia, Elysia } from 'elysia'
import { factorAdminRoutes } from './admin'
import type { FactorRouteInputs } from './kit'
import { passkeyRoutes } from './passkeys'
import { secondStepRoutes } from './second-step'

export type { FactorRouteInputs } from './kit'

/**
 * Passkeys, TOTP, recovery codes and the second step of a sign-in (CONTRACT section 15), under
 * one prefix. The ceremonies live in the database (any instance finishes what another began).
 * Three plugins, not one chain: one chain of 14 routes is more than TypeScript's unions hold.
 */
export function factorRoutes(inputs: FactorRouteInputs, prefix: '' | '/v1' | '/v2') {
  return new Elysia()
    .use(passkeyRoutes(inputs, prefix) as unknown as AnyElysia)
    .use(secondStepRoutes(inputs, prefix) as unknown as AnyElysia)
    .use(factorAdminRoutes(inputs, prefix) as unknown as AnyElysia)
}
