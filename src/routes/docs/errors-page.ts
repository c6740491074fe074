import { ERROR_CODES } from '../../errors/errors'

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`).replace(/`([^`]+)`/g, '<code>$1</code>')

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222}
code{background:#f3f3f3;padding:0 .2em}small{color:#666;font-weight:normal}section{border-top:1px solid #ddd}
:target{background:#fffbe6}`

/**
 * /docs/errors: every error code with its status and meaning; documentation_url points here.
 * The page and its one inline stylesheet (whose hash the page's CSP allows).
 */
export function renderErrorsPage(version: string): { html: string; style: string } {
  const rows = Object.entries(ERROR_CODES)
    .map(
      ([code, { status, summary, help }]) => `<section id="${code}">
<h2><code>${code}</code> <small>HTTP ${status}</small></h2>
<p><strong>${escapeHtml(summary)}</strong> ${escapeHtml(help)}</p>
</section>`,
    )
    .join('\n')
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>roster error codes</title>
<style>${STYLE}</style></head><body>
<h1>roster error codes</h1>
<p>Every answer that is not a success carries this envelope:</p>
<pre><code>{ "error": { "code": "VALIDATION_ERROR", "message": "...",
    "details": [ { "field": "email", "message": "...", "received": "not-an-email" } ],
    "documentation_url": ".../docs/errors#VALIDATION_ERROR" },
  "request_id": "req_..." }</code></pre>
<p>The <code>request_id</code> is also in the <code>X-Request-Id</code> header and in the server log.
Send your own <code>X-Request-Id</code> (1–128 of A–Z a–z 0–9 . _ -) to follow a request through.</p>
${rows}
<p><a href="/swagger">API reference</a> · roster ${escapeHtml(version)}</p>
</body></html>`
  return { html, style: STYLE }
}
