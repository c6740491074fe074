import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import swaggerCss from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' }
import swaggerJs from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }
import { renderErrorsPage } from './errors-page'

const ASSET_CACHE = 'public, max-age=86400'
const HTML = { 'content-type': 'text/html; charset=utf-8' }

/**
 * /swagger (Swagger UI, its assets served from the binary so it works offline),
 * /swagger/json (the OpenAPI document), and /docs/errors (what each error code means).
 */
export function docsRoutes(version: string) {
  const errorsPage = renderErrorsPage(version)
  return new Elysia({ name: 'docs' })
    .use(
      openapi({
        path: '/swagger',
        provider: 'swagger-ui',
        swagger: {
          cdn: '/swagger/assets/swagger-ui-bundle.js',
          theme: '/swagger/assets/swagger-ui.css',
          autoDarkMode: false,
        },
        exclude: { paths: [/^\/v1\//] },
        documentation: {
          info: {
            title: 'roster',
            version,
            description:
              'A users API with credentials, uploads and signed webhooks, in one executable. Unversioned paths are v1; every /X also answers as /v1/X (not listed here) and as /v2/X. Errors use one envelope, described at /docs/errors. When the server runs with --rate-limit, every route but /health and /metrics may also answer 429 RATE_LIMITED with Retry-After, and carries RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset and RateLimit-Policy.',
          },
          tags: [
            { name: 'users', description: 'User records' },
            { name: 'credentials', description: 'Sign-in, sessions, tokens and API keys' },
            { name: 'uploads', description: 'Files, streamed to disk' },
            {
              name: 'webhooks',
              description: 'Signed deliveries from Stripe, Standard Webhooks senders and GitHub',
            },
            { name: 'operations', description: 'Health and service information' },
          ],
          components: {
            securitySchemes: {
              basic: { type: 'http', scheme: 'basic', description: 'email:password' },
              bearer: { type: 'http', scheme: 'bearer', description: 'access_token from /login' },
              session: {
                type: 'apiKey',
                in: 'cookie',
                name: 'session',
                description: 'from /login',
              },
              apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
              apiKeyQuery: { type: 'apiKey', in: 'query', name: 'api_key' },
            },
          },
        },
      }),
    )
    .get('/swagger/assets/swagger-ui-bundle.js', () => asset(swaggerJs, 'text/javascript'), {
      detail: { hide: true },
    })
    .get('/swagger/assets/swagger-ui.css', () => asset(swaggerCss, 'text/css'), {
      detail: { hide: true },
    })
    .get('/docs', () => Response.redirect('/docs/errors', 302), { detail: { hide: true } })
    .get('/docs/errors', () => new Response(errorsPage, { headers: HTML }), {
      detail: { hide: true },
    })
}

function asset(path: string, type: string): Response {
  const file = Bun.file(path)
  return new Response(file, {
    headers: {
      'content-type': type,
      'content-length': String(file.size),
      'cache-control': ASSET_CACHE,
    },
  })
}
