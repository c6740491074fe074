/** A page of a list as services read it: `limit` rows after skipping `offset`. */
export interface PageRequest {
  limit: number
  offset: number
}
