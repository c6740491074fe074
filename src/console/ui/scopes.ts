/**
 * The scopes a key may hold (CONTRACT section 12), for the keys page. The console is browser
 * code and imports nothing of the server's; test/console/scopes.test.ts checks this list
 * against src/auth/access.ts.
 */
export const SCOPES = [
  'users:read',
  'users:write',
  'uploads:read',
  'uploads:write',
  'webhooks:read',
  'webhooks:write',
  'keys:write',
  'metrics:read',
  'scim',
  'audit:read',
] as const
