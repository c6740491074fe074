import type { TSchema } from '@sinclair/typebox'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { Value } from '@sinclair/typebox/value'
import type { ValidationError } from 'elysia'
import { fieldDetail } from '../errors/details'
import type { ErrorDetail } from '../errors/errors'

interface SchemaIssue {
  type: number
  path: string
  value: unknown
  message: string
  schema?: { error?: unknown }
}

/**
 * Turns Elysia's validation failure into the contract's details: every bad field once, named
 * plainly (`address.city`, not `/address/city`), with a readable message and the received
 * text (see fieldDetail).
 */
export function detailsFromValidation(error: ValidationError): ErrorDetail[] {
  const byField = new Map<string, ErrorDetail>()
  for (const issue of issuesOf(error)) {
    const field = fieldName(issue.path, error.type)
    if (byField.has(field)) continue
    byField.set(field, detailFor(field, issue))
    if (byField.size >= MAX_DETAILS) break
  }
  if (byField.size === 0) {
    byField.set(error.type, fieldDetail(error.type, 'is invalid'))
  }
  return [...byField.values()]
}

const MAX_DETAILS = 64

/**
 * TypeBox's own error list. (Elysia's `error.all` decorates each issue with a summary built by
 * string interpolation of the value, which overflows the stack on deeply nested input.)
 */
function issuesOf(error: ValidationError): Iterable<SchemaIssue> {
  const validator = error.validator as { Errors?: (value: unknown) => Iterable<SchemaIssue> }
  if (typeof validator?.Errors === 'function') return validator.Errors(error.value)
  return Value.Errors(error.validator as TSchema, error.value) as Iterable<SchemaIssue>
}

function detailFor(field: string, issue: SchemaIssue): ErrorDetail {
  switch (issue.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return fieldDetail(field, 'is required')
    case ValueErrorType.ObjectAdditionalProperties:
      return fieldDetail(field, 'is not a known field', issue.value)
    default: {
      const custom = issue.schema?.error
      return fieldDetail(field, typeof custom === 'string' ? custom : issue.message, issue.value)
    }
  }
}

function fieldName(path: string, fallback: string): string {
  const plain = path.replace(/^\//, '').replaceAll('/', '.')
  return plain === '' ? fallback : plain
}
