/**
 * A write refused by a unique index, said the same way by every backend (each maps its own
 * error: SQLITE_CONSTRAINT_UNIQUE, PostgreSQL's 23505). The domain that owns the rule turns it
 * into its CONFLICT answer, once.
 */
export class UniqueViolation extends Error {
  /** The column of the index that refused it (`email_key`, `username_key`), when the database says. */
  readonly column: string | null

  constructor(column: string | null = null) {
    super('a unique index refused the write')
    this.column = column
  }
}
