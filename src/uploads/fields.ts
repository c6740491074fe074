import { fieldDetail } from '../errors/details'
import { validationFailed } from '../errors/errors'
import { DECEPTIVE_MESSAGE, hasDeceptiveCharacter } from '../text'

export const MAX_DESCRIPTION = 1000
/** The text fields an upload takes besides its files. */
export const KNOWN_FIELDS = new Set(['description', 'public'])

export interface UploadMeta {
  description: string | null
  isPublic: boolean
}

/** description (at most 1000 characters) and public (true/false in any case, default false). */
export function uploadFields(fields: ReadonlyMap<string, string>): UploadMeta {
  const problems = []
  for (const name of fields.keys()) {
    if (!KNOWN_FIELDS.has(name))
      problems.push(fieldDetail(name, 'is not a known field', fields.get(name)))
  }
  const description = fields.get('description') ?? null
  if (
    description !== null &&
    ([...description].length > MAX_DESCRIPTION || !description.isWellFormed())
  ) {
    problems.push(
      fieldDetail('description', `must be at most ${MAX_DESCRIPTION} characters`, description),
    )
  } else if (description !== null && hasDeceptiveCharacter(description)) {
    problems.push(fieldDetail('description', DECEPTIVE_MESSAGE, description))
  }
  const publicText = fields.get('public')
  const isPublic = publicText === undefined ? false : publicText.toLowerCase() === 'true'
  if (publicText !== undefined && !['true', 'false'].includes(publicText.toLowerCase())) {
    problems.push(fieldDetail('public', 'must be true or false', publicText))
  }
  if (problems.length > 0) throw validationFailed(problems)
  return { description, isPublic }
}
