import { Elysia } from 'elysia'
import { CONSOLE_SCRIPT, CONSOLE_STYLE } from '../console/assets.gen'
import { notFound } from '../errors/errors'
import { NO_STORE } from '../http/credentials'
import { pageHeaders } from '../http/page-headers'

/**
 * Only the console's own files run; it talks only to this origin; no page may frame it. The
 * bundle sets no inline styles or scripts, so nothing needs 'unsafe-inline'.
 */
const SECURITY_HEADERS = pageHeaders([
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
])

export const CONSOLE_CSP = SECURITY_HEADERS['content-security-policy'] as string

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>roster console</title>
<link rel="icon" type="image/svg+xml" href="/console/assets/icon.svg">
<link rel="stylesheet" href="/console/assets/${CONSOLE_STYLE.name}">
<script type="module" src="/console/assets/${CONSOLE_SCRIPT.name}"></script>
</head>
<body>
<div id="console"><noscript><p>The roster console needs JavaScript.</p></noscript></div>
</body>
</html>
`

/** So the browser's favicon request finds something (a 404 would be an error in its console). */
const ICON = {
  name: 'icon.svg',
  type: 'image/svg+xml',
  body: '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0b57d0"/><path d="M4 4h8v2H4zm0 3h8v2H4zm0 3h5v2H4z" fill="#fff"/></svg>',
}

const ASSETS = new Map<string, { name: string; type: string; body: string }>(
  [CONSOLE_SCRIPT, CONSOLE_STYLE, ICON].map((asset) => [asset.name, asset]),
)

/**
 * /console: the web console (src/console/ui), built into the binary. The page is never cached
 * (it names the current assets); the assets are named by their content hash and cached for good.
 */
export function consoleRoutes() {
  return new Elysia({ name: 'console' })
    .get(
      '/console',
      () =>
        new Response(PAGE, {
          headers: {
            ...SECURITY_HEADERS,
            'content-type': 'text/html; charset=utf-8',
            // The page a signed-in operator works in: never kept by a cache (section 11).
            'cache-control': NO_STORE,
          },
        }),
      { detail: { hide: true } },
    )
    .get(
      '/console/assets/:name',
      ({ params }) => {
        const asset = ASSETS.get(params.name)
        if (asset === undefined) throw notFound('No console file with this name')
        return new Response(asset.body, {
          headers: {
            ...SECURITY_HEADERS,
            'content-type': asset.type,
            // Hashed names change with their content; the icon's name does not.
            'cache-control':
              asset === ICON ? 'public, max-age=86400' : 'public, max-age=31536000, immutable',
          },
        })
      },
      { detail: { hide: true } },
    )
}
