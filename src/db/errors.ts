/**
 * A database the server cannot use, on either backend: not SQLite, unreadable, unreachable,
 * failing to migrate, or newer than this binary. One line for the operator.
 */
export class DatabaseOpenError extends Error {}

/** `roster copy` cannot start or did not verify: one line for the operator. */
export class CopyError extends Error {}
