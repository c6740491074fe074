import type { SQL } from 'bun'

/** Deltas a read may find before it asks for a fold: a read sums at most a few hundred rows. */
const FOLD_AFTER_DELTAS = 256
/** How soon after this instance's last write its deltas are folded. */
const FOLD_DELAY_MS = 1_000

/**
 * The number of users (migration 0017): `user_count.n` plus the deltas the users triggers
 * append, which no two writers share. Exact in every snapshot, since a fold moves deltas into
 * `n` in one transaction. This instance folds a second after it writes users, or at once when
 * a read finds many deltas; a fold of another instance's deltas is as good as its own.
 */
export interface UserCount {
  /** The total, alone; inside a transaction, in its snapshot. */
  read(on?: SQL): Promise<number>
  /** After users were inserted or deleted here: fold soon. */
  written(): void
  /** After a read saw how many deltas wait. */
  seen(deltas: number): void
}

/**
 * A FROM item with the total (`total`, int8) and how many deltas wait (`deltas`), read in the
 * statement's snapshot.
 */
export const USER_COUNT_FROM = `(SELECT (c.n + coalesce(d.total, 0))::int8 AS total, d.deltas
  FROM user_count c, (SELECT sum(delta) AS total, count(*)::int AS deltas FROM user_count_deltas) d)`

export function createUserCount(pool: SQL): UserCount {
  let folding: Promise<void> | null = null
  let timer: ReturnType<typeof setTimeout> | null = null
  const fold = () => {
    if (timer !== null) clearTimeout(timer)
    timer = null
    if (folding !== null) return
    folding = pool`
      WITH moved AS (DELETE FROM user_count_deltas RETURNING delta)
      UPDATE user_count SET n = n + (SELECT sum(delta) FROM moved)
      WHERE id = 1 AND EXISTS (SELECT 1 FROM moved)`
      // A failed fold loses nothing: the deltas stay and the next fold moves them.
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        folding = null
      })
  }
  const seen = (deltas: number) => {
    if (deltas >= FOLD_AFTER_DELTAS) fold()
  }
  return {
    async read(on = pool) {
      const [row] = await on.unsafe<{ total: string; deltas: number }[]>(
        `SELECT total, deltas FROM ${USER_COUNT_FROM} counted`,
      )
      seen(row?.deltas ?? 0)
      return Number(row?.total ?? 0)
    },
    written() {
      if (timer !== null) return
      timer = setTimeout(fold, FOLD_DELAY_MS)
      timer.unref()
    },
    seen,
  }
}
