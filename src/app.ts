import { Elysia } from 'elysia'
import { StreamSlots } from './audit/stream-slots'
import { type Deps, VERSION } from './deps'
import type { AccessLog } from './http/access-log'
import { answerObservers } from './http/answer-observers'
import { corsPolicy, optionsRoutes } from './http/cors'
import { noStoreForCredentials } from './http/credentials'
import { errorHandler } from './http/error-handler'
import { hostGuard } from './http/host-guard'
import { jsonResponses } from './http/json-response'
import { requestPipeline } from './http/pipeline'
import { rateLimit } from './http/rate-limit'
import { RouteTable } from './http/route-table'
import { unroutedRequests } from './http/unrouted'
import { accountChangeRoutes, linkPageRoutes, mailFlowRoutes } from './routes/account/mail-flows'
import { accountRoutes } from './routes/account/routes'
import { eventsRoutes, STREAM_LIFETIME_MS } from './routes/audit/events'
import { auditRoutes } from './routes/audit/routes'
import { hasSessionCookie } from './routes/auth/cookies'
import { csrfGuard } from './routes/auth/csrf'
import { authPlugin } from './routes/auth/plugin'
import { authRoutes } from './routes/auth/routes'
import { consoleRoutes } from './routes/console'
import { docsRoutes } from './routes/docs/routes'
import { factorRoutes } from './routes/factors/routes'
import { groupRoutes } from './routes/groups/routes'
import { healthChecks, healthRoutes } from './routes/health'
import { mailRoutes } from './routes/mail/routes'
import { metricsRoutes } from './routes/metrics'
import { scimRoutes } from './routes/scim/routes'
import { uploadRoutes } from './routes/uploads/routes'
import { userExportRoutes } from './routes/users/export-routes'
import { provisioningRoutes } from './routes/users/provisioning'
import { type ApiVersion, usersRoutes } from './routes/users/routes'
import { registerEmailFormat } from './routes/users/schema'
import { webhookEndpointRoutes } from './routes/webhook-endpoints/routes'
import { webhookRoutes } from './routes/webhooks/routes'

/** Unversioned paths are v1 and stay v1; /v1 and /v2 mount the same services. */
const MOUNTS: readonly (readonly ['' | '/v1' | '/v2', ApiVersion])[] = [
  ['', 1],
  ['/v1', 1],
  ['/v2', 2],
]

/**
 * The HTTP application: CORS and the request pipeline (request id, API version, rate limit,
 * CSRF) first, then the error envelope, then the routes. Builds no server and opens no port (see server.ts). `routes` is filled with
 * the app's routes, for 405 answers, OPTIONS and the route labels of logs and metrics; the
 * access log is the server's.
 */
export function createApp(
  deps: Deps,
  options: { routes?: RouteTable; accessLog?: AccessLog } = {},
) {
  registerEmailFormat()
  const routes = options.routes ?? new RouteTable()
  const observers = answerObservers({
    routes,
    metrics: deps.metrics,
    accessLog: options.accessLog,
  })
  const app = new Elysia({ normalize: false })
    // The CORS plugin's hook runs first: the pipeline tidies what it set.
    .use(corsPolicy(deps.config.corsOrigins))
    .use(
      requestPipeline({
        startClock: observers.startClock,
        markPrivate: noStoreForCredentials(hasSessionCookie),
        refuseForeignHost: hostGuard(deps.config),
        limitRate: rateLimit(deps.config.rateLimit, deps.config.trustProxy, deps.clock),
        refuseCrossSite: csrfGuard(deps.config),
      }),
    )
    .use(jsonResponses(observers.onAnswer))
    // Before any route: Elysia's hooks cover only the routes registered after them.
    .use(
      errorHandler({
        publicUrl: deps.config.publicUrl,
        routes,
        log: deps.log,
        onAnswer: observers.onAnswer,
        onDiskFull: () => deps.disk.refused(),
      }),
    )
    .use(optionsRoutes(routes))
    .use(docsRoutes(VERSION, deps.config.publicUrl))
    .use(consoleRoutes())
    .use(linkPageRoutes(deps.config))
  const inputs = routeInputs(deps)
  app.use(
    metricsRoutes(deps.metrics.render, {
      auth: inputs.users.auth,
      usersAccess: deps.config.usersAccess,
    }),
  )
  for (const [prefix, version] of MOUNTS) {
    app.use(healthRoutes(inputs.health, prefix))
    app.use(userExportRoutes(inputs.userExport, prefix))
    app.use(usersRoutes(inputs.users, prefix, version))
    app.use(provisioningRoutes(inputs.scim, prefix))
    app.use(accountRoutes(inputs.account, prefix))
    app.use(mailFlowRoutes(inputs.mailFlows, prefix))
    app.use(factorRoutes(inputs.factors, prefix))
    app.use(accountChangeRoutes(inputs.mailFlows, prefix))
    app.use(mailRoutes(inputs.mail, prefix))
    app.use(groupRoutes(inputs.groups, prefix))
    app.use(authRoutes(inputs.apiKeys, prefix))
    app.use(uploadRoutes(inputs.uploads, prefix))
    app.use(webhookRoutes(inputs.webhooks, prefix))
    app.use(auditRoutes(inputs.audit, prefix))
    app.use(eventsRoutes(inputs.events, prefix))
    app.use(webhookEndpointRoutes(inputs.webhookEndpoints, prefix))
  }
  app.use(scimRoutes(inputs.scim))
  app.use(unroutedRequests(routes))
  routes.load(app.routes)
  return app
}

export type App = ReturnType<typeof createApp>

/**
 * What each route module is given: only what it uses, taken from the deps here, so that no
 * feature imports deps.ts (see docs/ARCHITECTURE.md). One auth plugin and one set of health
 * checks serve every mount.
 */
function routeInputs(deps: Deps) {
  const { config, users, clock } = deps
  const auth = authPlugin(deps.authenticator, config)
  /** What every way of signing in needs to answer like /login (routes/auth/sign-in.ts). */
  const signIn = { door: deps.door, config }
  return {
    health: {
      checks: healthChecks({
        clock,
        disk: deps.disk,
        checkDatabase: deps.checkDatabase,
        checkStorage: () => deps.fileStore.check(),
      }),
      version: VERSION,
      clock,
      startedAt: deps.startedAt,
      publicUrl: config.publicUrl,
      auth,
      figuresNeedKey: config.usersAccess === 'protected',
    },
    userExport: { auth, users, clock, usersAccess: config.usersAccess },
    users: {
      auth,
      users,
      idempotency: deps.idempotency,
      transaction: deps.transaction,
      door: deps.door,
      ownChanges: deps.mail.flows,
      config,
    },
    groups: {
      auth,
      groups: deps.groups,
      idempotency: deps.idempotency,
      transaction: deps.transaction,
      config,
    },
    account: {
      ...signIn,
      auth,
      authenticator: deps.authenticator,
      users,
      credentials: deps.credentials,
    },
    factors: {
      auth,
      factors: deps.factors,
      users,
      authenticator: deps.authenticator,
      signIn,
      config,
    },
    mailFlows: {
      auth,
      flows: deps.mail.flows,
      config,
      signIn,
    },
    mail: {
      auth,
      outbox: deps.mail.outbox,
      wakeWorker: () => deps.mail.worker.wake(),
      config,
    },
    apiKeys: {
      auth,
      apiKeys: deps.apiKeys,
      counts: deps.counts,
      config,
      clock,
      door: deps.door,
      trustProxy: config.trustProxy,
    },
    uploads: {
      auth,
      uploads: deps.uploads,
      fileStore: deps.fileStore,
      uploadStored: deps.metrics.uploadStored,
      config,
    },
    webhooks: {
      auth,
      inbox: deps.webhooks.inbox,
      wakeWorker: () => deps.webhooks.worker.wake(),
      countEvent: (scheme: string, status: string) =>
        deps.metrics.webhookEvents.inc({ scheme, status }),
      clock,
      config,
    },
    audit: { auth, audit: deps.audit, config },
    scim: { auth, scimUsers: deps.scimUsers, scimGroups: deps.scimGroups, config },
    events: {
      auth,
      hub: deps.feed,
      slots: new StreamSlots(
        { perHolder: config.maxEventStreamsPerCredential, total: config.maxEventStreams },
        STREAM_LIFETIME_MS,
        clock,
      ),
      isPosition: deps.audit.feed.isPosition,
      config,
    },
    webhookEndpoints: { auth, endpoints: deps.outbound.endpoints, config },
  }
}
