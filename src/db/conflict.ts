/**
 * A write refused by a unique index, said the same way by every backend (each maps its own
 * error: SQLITE_CONSTRAINT_UNIQUE, PostgreSQL's 23505). The domain that owns the rule turns it
 * into its CONFLICT answer, once.
 */
export class UniqueViolation extends Error {
  constructor() {
    super('a unique index refused the write')
  }
}
