import type { SQL } from 'bun'
import { directionOf } from '../../db/page'
import {
  type FileRow,
  type NewUpload,
  type StoredFile,
  storedFileOfRow,
  type UploadRecord,
  type UploadRecords,
  type UploadRecordWrites,
  type UploadRow,
  uploadOfRow,
} from '../../uploads/records'
import { countOf, pageOf, type WithTotal } from './page'

const FILE_COLUMNS = 'id, upload_id, field, filename, content_type, size::float8 AS size, sha256'

/** Upload and file rows in PostgreSQL (see UploadRecords). */
export function createPgUploadRecords(
  pool: SQL,
  now: () => Date,
): UploadRecords & { inUnit(tx: SQL): UploadRecordWrites } {
  const filesOf = async (q: SQL, uploadIds: string[]): Promise<Map<string, FileRow[]>> => {
    const rows =
      uploadIds.length === 0
        ? []
        : await q.unsafe<FileRow[]>(
            `SELECT ${FILE_COLUMNS} FROM files WHERE upload_id = ANY($1::text[]) ORDER BY upload_id, position`,
            [uploadIds],
          )
    const byUpload = new Map<string, FileRow[]>()
    for (const row of rows) {
      const list = byUpload.get(row.upload_id) ?? []
      list.push(row)
      byUpload.set(row.upload_id, list)
    }
    return byUpload
  }

  const readUpload = async (q: SQL, id: string): Promise<UploadRecord | null> => {
    const [row] = await q<UploadRow[]>`SELECT * FROM uploads WHERE id = ${id}`
    if (row === undefined) return null
    return uploadOfRow(row, (await filesOf(q, [id])).get(id) ?? [])
  }

  /** The writes inside a transaction (a unit of work's, or one of their own). */
  const writesIn = (tx: SQL): UploadRecordWrites => ({
    async insert(upload, createdAt) {
      await tx`
        INSERT INTO uploads (id, description, public, owner_user_id, owner_key_id, created_at)
        VALUES (${upload.id}, ${upload.description}, ${upload.isPublic}, ${upload.owner.userId},
                ${upload.owner.keyId}, ${createdAt})`
      for (const [position, file] of upload.files.entries()) {
        await tx`
          INSERT INTO files (id, upload_id, field, filename, content_type, size, sha256, position)
          VALUES (${file.fileId}, ${upload.id}, ${file.field}, ${file.filename},
                  ${file.contentType}, ${file.size}, ${file.sha256}, ${position})`
      }
    },
    async remove(id) {
      const files = await tx<{ id: string }[]>`SELECT id FROM files WHERE upload_id = ${id}`
      const deleted = await tx`DELETE FROM uploads WHERE id = ${id} RETURNING 1`
      return deleted.length > 0 ? files.map((file) => file.id) : null
    },
  })

  return {
    inUnit: writesIn,
    async insert(upload: NewUpload): Promise<UploadRecord> {
      return await pool.begin(async (tx) => {
        await writesIn(tx).insert(upload, now().toISOString())
        return (await readUpload(tx, upload.id)) as UploadRecord
      })
    },

    get: (id) => readUpload(pool, id),

    async file(id: string): Promise<StoredFile | null> {
      const [row] = await pool.unsafe<(FileRow & Omit<UploadRow, 'id'>)[]>(
        `SELECT f.id, f.upload_id, f.field, f.filename, f.content_type, f.size::float8 AS size,
                f.sha256, u.public, u.owner_user_id, u.owner_key_id
         FROM files f JOIN uploads u ON u.id = f.upload_id WHERE f.id = $1`,
        [id],
      )
      if (row === undefined) return null
      return storedFileOfRow(row)
    },

    remove: (id) => pool.begin((tx) => writesIn(tx).remove(id)),

    count: () => countOf(pool`SELECT count(*)::int AS n FROM uploads`),

    async registered(fileIds) {
      if (fileIds.length === 0) return new Set()
      const rows = await pool<
        { id: string }[]
      >`SELECT id FROM files WHERE id = ANY(${fileIds}::text[])`
      return new Set(rows.map((row) => row.id))
    },

    async list(page) {
      // One snapshot for the page and its files.
      return await pool.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
        const direction = directionOf(page, 'newest')
        const { data, total } = await pageOf(
          await tx.unsafe<WithTotal<UploadRow & { n: number }>[]>(
            `SELECT *, (count(*) OVER ())::int AS total FROM uploads
             ORDER BY created_at ${direction}, id ${direction} LIMIT $1 OFFSET $2`,
            [page.limit, page.offset],
          ),
          () => tx`SELECT count(*)::int AS n FROM uploads`,
        )
        const files = await filesOf(
          tx,
          data.map((row) => row.id),
        )
        return { data: data.map((row) => uploadOfRow(row, files.get(row.id) ?? [])), total }
      })
    },
  }
}
