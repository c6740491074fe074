/**
 * Synchronous work as a promise: its value, or its error as a rejection (never a throw). The
 * SQLite implementations of the async store interfaces answer through this.
 */
export function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work())
  } catch (error) {
    return Promise.reject(error)
  }
}
