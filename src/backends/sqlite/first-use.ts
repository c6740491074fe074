/**
 * A value made the first time it is asked for. Drizzle's query builders cost milliseconds the
 * first time they run; a statement a write needs is prepared by the first such write, so that
 * start-up (and a server that only reads) does not pay for it.
 */
export function firstUse<T>(make: () => T): () => T {
  let made: { value: T } | undefined
  return () => {
    made ??= { value: make() }
    return made.value
  }
}
