/**
 * A unit of work: `work` gets the stores' writes as one transaction sees them; everything it
 * writes commits together or not at all, and the promise settles after the commit. Each
 * consumer names only the stores it uses (`Transaction<{ users: UserWrites }>`); the
 * composition root hands it one over all of them.
 *
 * The work must await only those stores: on SQLite it holds the writer until it settles.
 */
export type Transaction<Tx> = <T>(work: (tx: Tx) => Promise<T>) => Promise<T>
