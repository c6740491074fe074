/** A page of a list as services read it: `limit` rows after skipping `offset`. */
export interface PageRequest {
  limit: number
  offset: number
}

/** Which end of a list in creation order comes first (`sort=created` or `sort=-created`). */
export type Chronology = 'oldest' | 'newest'

/** A page of a list in creation order, from either end. */
export interface ListRequest extends PageRequest {
  /** Absent: the list's usual end (newest first for uploads, mail and received webhooks). */
  first?: Chronology
}

/** The SQL direction of creation order for `request`, `usual` when it does not choose. */
export function directionOf(request: ListRequest, usual: Chronology): 'ASC' | 'DESC' {
  return (request.first ?? usual) === 'newest' ? 'DESC' : 'ASC'
}

/** One prepared statement per direction, for a list read either way. */
export function bothWays<T>(make: (direction: 'ASC' | 'DESC') => T): Record<'ASC' | 'DESC', T> {
  return { ASC: make('ASC'), DESC: make('DESC') }
}
