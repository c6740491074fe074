/**
 * Headers for every HTML page roster serves (the console, Swagger UI, the error codes page): only
 * what `csp` allows runs, no page may frame them, nothing is sniffed, no referrer leaves.
 */
export function pageHeaders(csp: readonly string[]): Record<string, string> {
  return {
    'content-security-policy': [...csp, "base-uri 'none'", "frame-ancestors 'none'"].join('; '),
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
  }
}

/** A CSP source for one inline `<style>` or `<script>`: its SHA-256, so nothing else inline runs. */
export function inlineHash(text: string): string {
  return `'sha256-${new Bun.CryptoHasher('sha256').update(text).digest('base64')}'`
}
