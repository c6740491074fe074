import { parseRowId } from '../../db/row-id'
import { ifMatchTags } from '../../http/conditional'

export { etagOf } from '../../users/records'

const USER_TAG = /^"([0-9]+)\.([0-9]+)"$/

/**
 * The versions of user `idText` that an If-Match header accepts: null when any will do (no
 * header, or `*`), else the versions its strong tags for this user name (possibly none: then
 * no version matches). The service compares versions, never headers, so a store can make the
 * check part of its update (`WHERE version IN (…)`).
 */
export function versionsFromIfMatch(header: string | null, idText: string): number[] | null {
  const tags = ifMatchTags(header)
  if (tags === null) return null
  const id = parseRowId(idText)
  const versions: number[] = []
  for (const tag of tags) {
    const match = USER_TAG.exec(tag)
    const version = parseRowId(match?.[2])
    if (id !== null && parseRowId(match?.[1]) === id && version !== null) versions.push(version)
  }
  return versions
}
