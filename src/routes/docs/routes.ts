import { Elysia } from 'elysia'
import swaggerCss from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' }
import swaggerJs from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }
import { inlineHash, pageHeaders } from '../../http/page-headers'
import { publicBaseUrl } from '../../http/request-context'
import { renderErrorsPage } from './errors-page'
import { openApiDocument } from './openapi'

const ASSET_CACHE = 'public, max-age=86400'

/**
 * Swagger UI runs its own bundle and talks to this origin only; its stylesheet draws icons from
 * `data:` SVGs. (Checked in Chromium: it renders and runs "Try it out" without inline styles.)
 */
const SWAGGER_HEADERS = {
  ...pageHeaders([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
  ]),
  'content-type': 'text/html; charset=utf-8',
}

/** Starts Swagger UI on the document; a file of its own, so the page needs no inline script. */
const SWAGGER_INIT = `window.onload = () => {
  window.ui = SwaggerUIBundle({ url: '/swagger/json', dom_id: '#swagger-ui' })
}
`

const SWAGGER_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>roster API</title>
<link rel="stylesheet" href="/swagger/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/swagger/assets/swagger-ui-bundle.js"></script>
<script src="/swagger/assets/init.js"></script>
</body>
</html>
`

/**
 * /swagger (Swagger UI, its assets served from the binary so it works offline),
 * /swagger/json (the OpenAPI document, built once on first request from every route the app
 * registered), and /docs/errors (what each error code means).
 */
export function docsRoutes(version: string, publicUrl: string | null) {
  const errorsPage = renderErrorsPage(version)
  // The errors page is static: its one inline stylesheet is allowed by its hash, nothing else.
  const errorsHeaders = {
    ...pageHeaders([
      "default-src 'none'",
      `style-src ${inlineHash(errorsPage.style)}`,
      "form-action 'none'",
    ]),
    'content-type': 'text/html; charset=utf-8',
  }
  let document: Promise<object> | null = null
  /**
   * The document, built once, with this server's own address in `servers` (--public-url, or
   * the request's origin), so "Try it out" and generated clients call where roster runs.
   */
  const served = async (request: Request) => {
    document ??= openApiDocument(docs, version)
    const built = await document
    const url = publicBaseUrl(request, publicUrl)
    return { ...built, servers: [{ url, description: 'this roster' }] }
  }
  const docs = new Elysia({ name: 'docs' })
  return docs
    .get('/swagger', () => new Response(SWAGGER_PAGE, { headers: SWAGGER_HEADERS }), {
      detail: { hide: true },
    })
    .get('/swagger/json', ({ request }) => served(request), { detail: { hide: true } })
    .get('/openapi.json', ({ request }) => served(request), { detail: { hide: true } })
    .get('/swagger/assets/swagger-ui-bundle.js', () => asset(swaggerJs, 'text/javascript'), {
      detail: { hide: true },
    })
    .get('/swagger/assets/swagger-ui.css', () => asset(swaggerCss, 'text/css'), {
      detail: { hide: true },
    })
    .get(
      '/swagger/assets/init.js',
      () =>
        new Response(SWAGGER_INIT, {
          headers: {
            'content-type': 'text/javascript; charset=utf-8',
            'cache-control': ASSET_CACHE,
          },
        }),
      { detail: { hide: true } },
    )
    .get('/docs', () => Response.redirect('/docs/errors', 302), { detail: { hide: true } })
    .get('/docs/errors', () => new Response(errorsPage.html, { headers: errorsHeaders }), {
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
