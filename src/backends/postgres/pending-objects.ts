import type { SQL } from 'bun'
import type { PendingFiles } from '../../uploads/files'

/** The list of files being written to the bucket, in PostgreSQL's `pending_objects` table. */
export function createPgPendingFiles(pool: SQL): PendingFiles {
  return {
    async add(fileId, startedAt) {
      await pool`INSERT INTO pending_objects (id, started_at) VALUES (${fileId}, ${startedAt})`
    },
    async remove(fileIds) {
      if (fileIds.length === 0) return
      await pool`DELETE FROM pending_objects WHERE id = ANY(${fileIds}::text[])`
    },
    async touch(fileId, at) {
      await pool`UPDATE pending_objects SET touched_at = ${at} WHERE id = ${fileId}`
    },
    async idleSince(cutoff, limit) {
      const rows = await pool<{ id: string }[]>`
        SELECT id FROM pending_objects WHERE coalesce(touched_at, started_at) < ${cutoff}
        ORDER BY started_at LIMIT ${limit}`
      return rows.map((row) => row.id)
    },
  }
}
