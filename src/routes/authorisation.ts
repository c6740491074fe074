import { covers, type Grant, type Scope } from '../auth/access'
import { grantsOf, type Principal, type Scheme } from '../auth/principal'
import { fieldDetail } from '../errors/details'
import { AppError } from '../errors/errors'

/**
 * Who may call each operation: the one table (CONTRACT section 12). Each route takes its hook
 * options from here (`guardOf`), the OpenAPI document its `security` (with the scope), the
 * docs/sign-in.md its "Who may do what" table; test/routes/authorisation.test.ts walks every route of
 * the app and fails on one without a rule here, or with a rule it does not apply.
 */
export interface Rule {
  /**
   * The scope an API key needs; an admin holds every scope. `*`: a key with every scope (what
   * an operation hands out is as strong as an admin). null: any valid key (or admin), or, with
   * `members: 'any'`, any signed-in user.
   */
  scope: Grant | null
  /**
   * A second scope the key needs as well: what the operation hands out is also another scope's
   * (an outbound webhook endpoint receives the audit log, so managing one needs audit:read).
   */
  alsoScope?: Scope
  /**
   * What a member (a user who is not an admin) may do: nothing here, its own record or upload
   * (the handler compares the target; `requireSelfOr`), or what any signed-in user may.
   */
  members: 'none' | 'self' | 'any'
  /**
   * Callers without credentials: never; always (a public route, or one that checks a signature
   * or an upload's public flag itself: with a scope, only public things are open); or only
   * while `--users-access` is open.
   */
  anonymous: 'never' | 'always' | 'open'
  /** The credentials the route reads. */
  schemes: readonly Scheme[]
  /**
   * When the operation's target is an admin's account (or makes one): what the caller needs
   * instead of the scope (section 17). `*`: a key with every scope or an admin (`users:write`
   * covers members only); `never`: not through this route at all (SCIM never changes an admin).
   * Absent: the operation changes no account.
   */
  admins?: '*' | 'never'
}

const KEY: readonly Scheme[] = ['apiKey']
/** A key's scope or an admin's credential: the key's challenge first, as before roles. */
const KEY_OR_USER: readonly Scheme[] = ['apiKey', 'basic', 'bearer', 'session']
const USER: readonly Scheme[] = ['bearer', 'session']
const NONE: readonly Scheme[] = []

/** What any signed-in user may do to its own account, with its bearer token or session. */
const SELF_SERVICE: Rule = { scope: null, members: 'any', anonymous: 'never', schemes: USER }
const SCIM: Rule = { scope: 'scim', members: 'none', anonymous: 'never', schemes: KEY }
const publicRoute: Rule = { scope: null, members: 'any', anonymous: 'always', schemes: NONE }
function keyOrAdmin(scope: Grant | null): Rule {
  return {
    scope,
    members: 'none',
    anonymous: 'never',
    schemes: KEY_OR_USER,
  }
}

/** Every operation, by method and path as the unversioned mount registers it. */
export const RULES = {
  'GET /health': { ...publicRoute, schemes: KEY },
  'GET /health/live': publicRoute,
  'GET /health/ready': publicRoute,
  'GET /metrics': { ...keyOrAdmin('metrics:read'), anonymous: 'open' },
  'GET /docs': publicRoute,
  'GET /docs/errors': publicRoute,
  'GET /swagger': publicRoute,
  'GET /swagger/json': publicRoute,
  'GET /openapi.json': publicRoute,
  'GET /swagger/assets/init.js': publicRoute,
  'GET /swagger/assets/swagger-ui-bundle.js': publicRoute,
  'GET /swagger/assets/swagger-ui.css': publicRoute,
  'GET /console': publicRoute,
  'GET /console/assets/:name': publicRoute,

  'POST /login': publicRoute,
  'POST /logout': { scope: null, members: 'any', anonymous: 'never', schemes: USER },
  'GET /me': { scope: null, members: 'any', anonymous: 'never', schemes: USER },
  'GET /secure': { scope: null, members: 'any', anonymous: 'never', schemes: ['basic'] },
  'GET /data': keyOrAdmin(null),

  // Passkeys and second factors (section 15): a user's own, through its bearer token or
  // session; the ceremonies that sign in are public (the passkey or the code is the credential).
  'POST /auth/passkeys/register/options': SELF_SERVICE,
  'POST /auth/passkeys/register/verify': SELF_SERVICE,
  'POST /auth/passkeys/login/options': publicRoute,
  'POST /auth/passkeys/login/verify': publicRoute,
  'GET /me/passkeys': SELF_SERVICE,
  'DELETE /me/passkeys/:id': SELF_SERVICE,
  'GET /me/factors': SELF_SERVICE,
  'POST /auth/totp/enroll': SELF_SERVICE,
  'POST /auth/totp/confirm': SELF_SERVICE,
  'DELETE /auth/totp': SELF_SERVICE,
  'POST /auth/recovery-codes': SELF_SERVICE,
  'POST /auth/mfa/verify': publicRoute,
  'GET /users/:id/factors': { ...keyOrAdmin('users:read'), members: 'self' },
  'DELETE /users/:id/factors': { ...keyOrAdmin('users:write'), admins: '*' },

  // The mail flows (section 14): links and codes are the credential; a signed-in user may ask
  // for its own verification without naming its address.
  'POST /auth/verify-email/request': {
    scope: null,
    members: 'any',
    anonymous: 'always',
    schemes: ['basic', 'bearer', 'session'],
  },
  'POST /auth/verify-email/confirm': publicRoute,
  'GET /auth/verify-email': publicRoute,
  'POST /auth/password-reset/request': publicRoute,
  'POST /auth/password-reset/confirm': publicRoute,
  'GET /auth/password-reset': publicRoute,
  'POST /auth/magic-link/request': publicRoute,
  'POST /auth/magic-link/confirm': publicRoute,
  'GET /auth/magic-link': publicRoute,
  'POST /auth/email-change/request': {
    scope: null,
    members: 'any',
    anonymous: 'never',
    schemes: ['basic', 'bearer', 'session'],
  },
  'POST /auth/email-change/confirm': publicRoute,
  'GET /auth/email-change': publicRoute,
  'POST /auth/email-change-undo/confirm': publicRoute,
  'GET /auth/email-change-undo': publicRoute,
  'POST /users/:id/invite': { ...keyOrAdmin('users:write'), admins: '*' },
  'POST /auth/invitation/confirm': publicRoute,
  'GET /auth/invitation': publicRoute,
  // The outbox holds unsent links, an admin's reset link among them: reading it is as strong
  // as setting an admin's password, so it takes `*` (section 17).
  'GET /mail': keyOrAdmin('*'),
  'GET /mail/:id': keyOrAdmin('*'),
  'POST /mail/:id/resend': keyOrAdmin('*'),
  'GET /audit': keyOrAdmin('audit:read'),
  'GET /audit/:id': keyOrAdmin('audit:read'),
  'GET /events': keyOrAdmin('audit:read'),
  // SCIM (section 13): an identity provider's key with the scim scope, and nothing else.
  'ALL /scim/v2/*': SCIM,
  'GET /scim/v2/ServiceProviderConfig': SCIM,
  'GET /scim/v2/ResourceTypes': SCIM,
  'GET /scim/v2/ResourceTypes/:id': SCIM,
  'GET /scim/v2/Schemas': SCIM,
  'GET /scim/v2/Schemas/:id': SCIM,
  'GET /scim/v2/Users': SCIM,
  'POST /scim/v2/Users': SCIM,
  'POST /scim/v2/Users/.search': SCIM,
  'GET /scim/v2/Users/:id': SCIM,
  'PUT /scim/v2/Users/:id': { ...SCIM, admins: 'never' },
  'PATCH /scim/v2/Users/:id': { ...SCIM, admins: 'never' },
  'DELETE /scim/v2/Users/:id': { ...SCIM, admins: 'never' },
  'GET /scim/v2/Groups': SCIM,
  'POST /scim/v2/Groups': SCIM,
  'POST /scim/v2/Groups/.search': SCIM,
  'GET /scim/v2/Groups/:id': SCIM,
  'PUT /scim/v2/Groups/:id': SCIM,
  'PATCH /scim/v2/Groups/:id': SCIM,
  'DELETE /scim/v2/Groups/:id': SCIM,
  'HEAD /events': keyOrAdmin('audit:read'),
  'POST /api-keys': keyOrAdmin('keys:write'),
  'GET /api-keys': keyOrAdmin('keys:write'),
  'DELETE /api-keys/:id': keyOrAdmin('keys:write'),

  'GET /users': { ...keyOrAdmin('users:read'), anonymous: 'open' },
  'POST /users': { ...keyOrAdmin('users:write'), anonymous: 'open', admins: '*' },
  'GET /users/export': keyOrAdmin('users:read'),
  'GET /users/:id': { ...keyOrAdmin('users:read'), members: 'self', anonymous: 'open' },
  'GET /users/:id/provisioning': {
    ...keyOrAdmin('users:read'),
    members: 'self',
    anonymous: 'open',
  },
  'PUT /users/:id': {
    ...keyOrAdmin('users:write'),
    members: 'self',
    anonymous: 'open',
    admins: '*',
  },
  'PATCH /users/:id': {
    ...keyOrAdmin('users:write'),
    members: 'self',
    anonymous: 'open',
    admins: '*',
  },
  'DELETE /users/:id': {
    ...keyOrAdmin('users:write'),
    members: 'self',
    anonymous: 'open',
    admins: '*',
  },

  'GET /groups': { ...keyOrAdmin('users:read'), anonymous: 'open' },
  'POST /groups': { ...keyOrAdmin('users:write'), anonymous: 'open' },
  'GET /groups/:id': { ...keyOrAdmin('users:read'), anonymous: 'open' },
  'PUT /groups/:id': { ...keyOrAdmin('users:write'), anonymous: 'open' },
  'PATCH /groups/:id': { ...keyOrAdmin('users:write'), anonymous: 'open' },
  'DELETE /groups/:id': { ...keyOrAdmin('users:write'), anonymous: 'open' },
  'PUT /groups/:id/members/:userId': { ...keyOrAdmin('users:write'), anonymous: 'open' },
  'DELETE /groups/:id/members/:userId': { ...keyOrAdmin('users:write'), anonymous: 'open' },

  // A member uploads as itself; reads and deletes of one upload are decided by its owner and
  // its public flag (uploads/access.ts), with the scope for everyone else's.
  'POST /upload': { ...keyOrAdmin('uploads:write'), members: 'any', anonymous: 'open' },
  'GET /uploads': keyOrAdmin('uploads:read'),
  'GET /uploads/:id': { ...keyOrAdmin('uploads:read'), members: 'self', anonymous: 'always' },
  'DELETE /uploads/:id': { ...keyOrAdmin('uploads:write'), members: 'self' },
  'GET /files/:id': { ...keyOrAdmin('uploads:read'), members: 'self', anonymous: 'always' },
  'HEAD /files/:id': { ...keyOrAdmin('uploads:read'), members: 'self', anonymous: 'always' },

  // Signed by the sender, not authenticated by roster's credentials.
  'POST /webhooks': publicRoute,
  'POST /webhook': publicRoute,
  'GET /webhooks/events': keyOrAdmin('webhooks:read'),
  'POST /webhooks/events/:id/retry': keyOrAdmin('webhooks:write'),

  // Outbound webhooks: an endpoint receives audit events, so every operation needs audit:read.
  'GET /webhook-endpoints': { ...keyOrAdmin('webhooks:read'), alsoScope: 'audit:read' },
  'POST /webhook-endpoints': { ...keyOrAdmin('webhooks:write'), alsoScope: 'audit:read' },
  'GET /webhook-endpoints/:id': { ...keyOrAdmin('webhooks:read'), alsoScope: 'audit:read' },
  'PATCH /webhook-endpoints/:id': { ...keyOrAdmin('webhooks:write'), alsoScope: 'audit:read' },
  'DELETE /webhook-endpoints/:id': { ...keyOrAdmin('webhooks:write'), alsoScope: 'audit:read' },
  'POST /webhook-endpoints/:id/rotate-secret': {
    ...keyOrAdmin('webhooks:write'),
    alsoScope: 'audit:read',
  },
  'GET /webhook-endpoints/:id/deliveries': {
    ...keyOrAdmin('webhooks:read'),
    alsoScope: 'audit:read',
  },
  'GET /webhook-endpoints/:id/deliveries/:deliveryId': {
    ...keyOrAdmin('webhooks:read'),
    alsoScope: 'audit:read',
  },
  'POST /webhook-endpoints/:id/deliveries/:deliveryId/retry': {
    ...keyOrAdmin('webhooks:write'),
    alsoScope: 'audit:read',
  },
} as const satisfies Record<string, Rule>

export type Operation = keyof typeof RULES

/** What the auth macro (routes/auth/plugin.ts) is asked to check. */
export interface AuthRequirement {
  schemes: readonly Scheme[]
  /** Anonymous callers are let through (the route decides what they may do). */
  optional?: boolean
  /** Checked when a principal is required: the scope, and what members may do. */
  rule?: Rule
}

/** How the access mode of /users (section 11) is named in the config. */
export type UsersAccess = 'open' | 'protected'

/**
 * The operation's guard: `hook`, the route's `auth` option (none at all for a public route, so
 * its path reads no credential), and `security`, its OpenAPI requirements from the same rule.
 */
export function guardOf(
  operation: Operation,
  mode: UsersAccess,
): { hook: { auth?: AuthRequirement }; security: Record<string, string[]>[] } {
  const rule: Rule = RULES[operation]
  const anonymous = rule.anonymous === 'always' || (rule.anonymous === 'open' && mode === 'open')
  const security = securityOf(rule, anonymous)
  // A read open to everyone reads no credential at all: nothing it answers depends on one.
  const openRead = rule.anonymous === 'open' && mode === 'open' && /^(GET|HEAD) /.test(operation)
  if (rule.schemes.length === 0 || openRead) return { hook: {}, security }
  // Without a prototype and frozen: nothing added to Object.prototype (or later to this
  // object) can make a required credential optional.
  const auth: AuthRequirement = Object.freeze(
    Object.assign(
      Object.create(null),
      anonymous ? { schemes: rule.schemes, optional: true } : { schemes: rule.schemes, rule },
    ),
  )
  return { hook: { auth }, security }
}

/** The OpenAPI security schemes (routes/docs/openapi.ts) that carry each credential. */
const SECURITY_SCHEMES: Record<Scheme, readonly string[]> = {
  basic: ['basic'],
  bearer: ['bearer'],
  session: ['session'],
  apiKey: ['apiKeyHeader', 'apiKeyQuery', 'bearerApiKey'],
}

/**
 * OpenAPI 3.1 `security`: one requirement per credential, listing the scope it needs (3.1 lets
 * a non-OAuth requirement name roles or scopes); `{}` first when anonymous callers are let in.
 */
export function securityOf(rule: Rule, anonymous: boolean): Record<string, string[]>[] {
  if (rule.schemes.length === 0) return []
  const needs = scopesOf(rule)
  const requirements = rule.schemes.flatMap((scheme) =>
    SECURITY_SCHEMES[scheme].map((name) => ({ [name]: [...needs] })),
  )
  return anonymous ? [{}, ...requirements] : requirements
}

/**
 * Whether the caller may call an operation of this rule at all (a member's `self` is checked
 * again by the handler against its target). Throws FORBIDDEN naming the scope missing.
 */
export function authorise(principal: Principal, rule: Rule): void {
  if (principal.kind === 'user' && principal.role !== 'admin') {
    if (rule.members !== 'none') return
    throw forbidden(rule.scope, principal)
  }
  const grants = grantsOf(principal)
  const missing = scopesOf(rule).find((scope) => !covers(grants, scope))
  if (missing === undefined) return
  throw forbidden(missing, principal)
}

/** The scopes a key needs for the rule: none, one, or two. */
function scopesOf(rule: Rule): Grant[] {
  const also = Object.hasOwn(rule, 'alsoScope') ? rule.alsoScope : undefined
  return [rule.scope, also].filter((scope): scope is Grant => scope != null)
}

/**
 * A member on its own record (or an admin, or a key with the scope): the `self` half of a rule,
 * once the handler knows the target.
 */
export function requireSelfOr(principal: Principal | null, scope: Scope, userId: number): void {
  if (principal === null) return
  if (principal.kind === 'user' && principal.userId === userId) return
  if (covers(grantsOf(principal), scope)) return
  throw forbidden(scope, principal)
}

/** FORBIDDEN, with a detail naming the scope required and what the caller holds. */
export function forbidden(scope: Grant | null, principal: Principal | null): AppError {
  const held =
    principal?.kind === 'user' ? `role ${principal.role}` : grantsOf(principal).join(' ') || 'none'
  const needs = scope === null ? 'an API key or an admin' : `the ${scope} scope`
  return new AppError('FORBIDDEN', `This operation needs ${needs}`, [
    fieldDetail(
      'scope',
      scope === null ? 'an API key or an admin is required' : `${scope} is required`,
      held,
    ),
  ])
}

/**
 * docs/sign-in.md's "Who may do what" table, from the rules above (test/routes/authorisation.test.ts
 * checks the page holds exactly this). Public routes are named in one line after it.
 */
export function accessTable(): string {
  const rows = (Object.entries(RULES) as [Operation, Rule][])
    .filter(([, rule]) => rule.schemes.length > 0)
    .map(([operation, rule]) => {
      const path = operation.replace(/:([a-zA-Z]+)/g, '{$1}')
      const key = rule.schemes.includes('apiKey')
        ? rule.scope === null
          ? 'any key'
          : scopesOf(rule)
              .map((scope) => `\`${scope}\``)
              .join(' and ')
        : 'no'
      const admin = rule.schemes.some((scheme) => scheme !== 'apiKey') ? 'yes' : 'no'
      const member = { none: 'no', self: 'its own', any: 'yes' }[rule.members]
      const anonymous =
        rule.anonymous === 'always' && rule.scope !== null
          ? 'public ones'
          : { never: 'no', always: 'yes', open: 'while open' }[rule.anonymous]
      const onAdmin = rule.admins === undefined ? '' : rule.admins === '*' ? '`*`' : 'never'
      return `| \`${path}\` | ${key} | ${onAdmin} | ${admin} | ${admin === 'no' ? 'no' : member} | ${anonymous} |`
    })
  const publicRoutes = (Object.entries(RULES) as [Operation, Rule][])
    .filter(([, rule]) => rule.schemes.length === 0)
    .map(([operation]) => `\`${operation.replace(/:([a-zA-Z]+)/g, '{$1}')}\``)
  return [
    '| Operation | API key needs | On an admin’s account | Admin | Member | No credential |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `Public, no credential read: ${publicRoutes.join(', ')}.`,
  ].join('\n')
}
