/** The schemas roster's SCIM resources are made of (RFC 7643). */
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User'
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group'
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse'
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'

const SCHEMA_PREFIXES = [USER_SCHEMA, ENTERPRISE_SCHEMA, GROUP_SCHEMA].map(
  (schema) => `${schema.toLowerCase()}:`,
)

/**
 * An attribute path as roster looks it up: lower-cased (attribute names match without regard
 * to case, RFC 7643 section 2.1) and without the URN of the schema that defines it.
 */
export function attributeKey(path: string): string {
  const folded = path.toLowerCase()
  for (const prefix of SCHEMA_PREFIXES) {
    if (folded.startsWith(prefix)) return folded.slice(prefix.length)
  }
  return folded
}

/** The value of an object's attribute, its name matched without regard to case. */
export function attributeValue(object: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(object, name)) return object[name]
  const folded = name.toLowerCase()
  for (const key of Object.keys(object)) {
    if (key.toLowerCase() === folded) return object[key]
  }
  return undefined
}
