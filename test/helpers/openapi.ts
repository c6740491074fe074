import Ajv, { type ValidateFunction } from 'ajv/dist/2020'
import addFormats from 'ajv-formats'

interface Operation {
  responses: Record<string, { content?: Record<string, { schema: object }> }>
}
export interface OpenApiDoc {
  paths: Record<string, Record<string, Operation>>
  components: { schemas?: Record<string, object> }
}

// Pages for people, not API: the document leaves them out on purpose.
const DOCS_PAGES = /^\/(swagger|docs|console|openapi\.json)(\/|\?|$)/

/** What an answer looked like, as far as the document is concerned. */
export interface Answer {
  status: number
  contentType: string | null
  // biome-ignore lint/suspicious/noExplicitAny: answers of every shape are checked here.
  body: any
}

/**
 * Checks real answers against the OpenAPI document: the status must be documented for the
 * operation (an undocumented one is a problem), and a JSON body must match the schema given for
 * that status. A request for no operation (an unknown path, or a method the path does not
 * take) must be the error envelope with 404 or 405. /v1/X is checked as /X (the document lists
 * each route once). Problems are returned as text, one per answer that does not match.
 */
export class DocumentChecker {
  private readonly ajv: Ajv
  private readonly validators = new Map<string, ValidateFunction>()
  private readonly templates: { template: string; pattern: RegExp }[]
  private readonly envelope: ValidateFunction

  constructor(private readonly doc: OpenApiDoc) {
    this.ajv = new Ajv({ strict: false, allErrors: true })
    addFormats(this.ajv)
    this.ajv.addFormat('user-name', true)
    this.templates = Object.keys(doc.paths).map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    }))
    const anyError = Object.values(doc.paths)
      .flatMap((item) => Object.values(item))
      .flatMap((operation) => Object.entries(operation.responses))
      .find(([status]) => status === '500')?.[1].content?.['application/json']?.schema
    if (anyError === undefined)
      throw new Error('the document has no 500 answer to learn the envelope from')
    this.envelope = this.compile(anyError)
  }

  /**
   * The template a concrete path belongs to (`/v1/users/7` → `/users/{id}`), or null. Where
   * several match (`/users/export` and `/users/{id}`), the router takes the one that has the
   * method, as it falls back from a static segment to a parameter.
   */
  templateOf(path: string, verb?: string): string | null {
    // The server sees the path as the URL parser leaves it (`/keys/.` is `/keys/`); roster
    // routes /users/ as /users, and /v1/X as /X.
    const parsed = new URL(path.split('?', 1)[0] ?? '', 'http://localhost').pathname
    const plain = parsed.replace(/^\/v1(?=\/)/, '').replace(/(.)\/$/, '$1')
    const matching = this.templates.filter(({ pattern }) => pattern.test(plain))
    const withMethod = matching.find(
      ({ template }) => verb !== undefined && this.doc.paths[template]?.[verb] !== undefined,
    )
    return (withMethod ?? matching[0])?.template ?? null
  }

  /** A schema of the document, its `$ref`s to components/schemas resolved. */
  private compile(schema: object): ValidateFunction {
    return this.ajv.compile({ ...schema, components: this.doc.components })
  }

  /** A problem with this answer, or null when the document describes it. */
  check(method: string, path: string, answer: Answer): string | null {
    const where = `${method} ${path} → ${answer.status}`
    // The docs pages and their assets serve the document; they are not part of the API.
    if (DOCS_PAGES.test(path)) return null
    const verb = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase()
    const template = this.templateOf(path, verb)
    if (verb === 'options') return null
    const operation = template === null ? undefined : this.doc.paths[template]?.[verb]
    if (operation === undefined && isScimError(path, answer.body)) {
      // SCIM's resource names match in any case, so one catch-all route takes every other
      // spelling and method: it authenticates and reads the body before it knows the
      // operation, so 401, 403 and 413/415 can meet a method SCIM does not have there.
      return [400, 401, 403, 404, 405, 413, 415, 421, 429].includes(answer.status)
        ? null
        : `${where}: no SCIM operation, and not a refusal`
    }
    if (operation === undefined) {
      // Refusals made before routing (rate limit 429, CSRF 403, a foreign Host 421, a query
      // naming a prototype key 400) can meet any method and path.
      if (
        answer.status !== 400 &&
        answer.status !== 404 &&
        answer.status !== 405 &&
        answer.status !== 429 &&
        answer.status !== 403 &&
        answer.status !== 421
      )
        return `${where}: no operation, and not a 404 or 405`
      return method === 'HEAD' || this.envelope(answer.body) || isScimError(path, answer.body)
        ? null
        : `${where}: not the error envelope: ${this.ajv.errorsText(this.envelope.errors)}`
    }
    const response = operation.responses[String(answer.status)]
    if (response === undefined) return `${where}: status not documented for ${verb} ${template}`
    const schema = (
      response.content?.['application/json'] ?? response.content?.['application/scim+json']
    )?.schema
    if (method === 'HEAD' || schema === undefined) return null
    if (!(answer.contentType ?? '').includes('json'))
      return `${where}: documented as JSON, answered ${answer.contentType}`
    const key = `${verb} ${template} ${answer.status}`
    let validate = this.validators.get(key)
    if (validate === undefined) {
      validate = this.compile(schema)
      this.validators.set(key, validate)
    }
    return validate(answer.body) ? null : `${where}: ${this.ajv.errorsText(validate.errors)}`
  }
}

/** SCIM's error form, which every error under /scim/v2 has instead of the envelope. */
export function isScimError(path: string, body: unknown): boolean {
  if (!/^\/scim\/v2(\/|$|\?)/i.test(path)) return false
  const error = body as { schemas?: unknown; status?: unknown; detail?: unknown } | null
  return (
    Array.isArray(error?.schemas) &&
    error.schemas[0] === 'urn:ietf:params:scim:api:messages:2.0:Error' &&
    typeof error.status === 'string' &&
    typeof error.detail === 'string'
  )
}
