import { useState } from 'preact/hooks'
import { call, download, saveBlob } from '../api'
import {
  Confirm,
  Dialog,
  ErrorNote,
  formatBytes,
  formatDate,
  ListState,
  ListTable,
  Notice,
  type OffsetPage,
  Pager,
  RowAction,
  useChronologicalView,
  useLoad,
} from '../components'

interface StoredFile {
  id: string
  field: string
  filename: string
  content_type: string
  size: number
  sha256: string
  url: string
}

interface Upload {
  id: string
  description: string | null
  public: boolean
  created_at: string
  files: StoredFile[]
}

interface UploadPage {
  data: Upload[]
  pagination: OffsetPage
}

const totalSize = (upload: Upload) => upload.files.reduce((sum, file) => sum + file.size, 0)

/** The uploads, newest first; details with files, download, delete. */
export function UploadsPage() {
  const { offset, limit, setOffset, setLimit, sort, sortParam, sorting } = useChronologicalView(
    '-created',
    'Created',
    {},
  )
  const { data, error, loading, reload } = useLoad(
    async () =>
      (await call<UploadPage>(`/uploads?limit=${limit}&offset=${offset}${sortParam}`)).body,
    [offset, limit, sort],
  )
  const [showing, setShowing] = useState<Upload | null>(null)
  const [deleting, setDeleting] = useState<Upload | null>(null)
  const [notice, setNotice] = useState<string | null>(null)

  return (
    <>
      <Notice text={notice} />
      <ErrorNote error={error} />
      <ListState
        loading={loading && data === null}
        empty={data !== null && data.data.length === 0}
        nothing="No uploads yet."
      />
      {data !== null && data.data.length > 0 && (
        <>
          <ListTable
            sorting={sorting}
            caption={<>Uploads, newest first</>}
            columns={['Id', 'Description', 'Files', 'Size', 'Visibility', 'Created', 'Actions']}
          >
            {data.data.map((upload) => (
              <tr key={upload.id}>
                <td>
                  <code>{upload.id}</code>
                </td>
                <td>{upload.description ?? '—'}</td>
                <td>{upload.files.map((file) => file.filename).join(', ')}</td>
                <td>{formatBytes(totalSize(upload))}</td>
                <td>{upload.public ? 'public' : 'private'}</td>
                <td>{formatDate(upload.created_at)}</td>
                <td class="row-actions">
                  <RowAction
                    text="Details"
                    label={`Details of upload ${upload.id}`}
                    onClick={() => setShowing(upload)}
                  />
                  <RowAction
                    text="Delete"
                    label={`Delete upload ${upload.id}`}
                    danger
                    onClick={() => setDeleting(upload)}
                  />
                </td>
              </tr>
            ))}
          </ListTable>
          <Pager page={data.pagination} onOffset={setOffset} onLimit={setLimit} />
        </>
      )}
      {showing !== null && <UploadDetails upload={showing} onClose={() => setShowing(null)} />}
      {deleting !== null && (
        <Confirm
          title="Delete this upload?"
          action="Delete upload"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await call(`/uploads/${deleting.id}`, { method: 'DELETE' })
            setNotice(`Upload ${deleting.id} deleted.`)
            reload()
          }}
        >
          <p>
            The upload <code>{deleting.id}</code> and its {deleting.files.length} file
            {deleting.files.length === 1 ? '' : 's'} will be deleted. This cannot be undone.
          </p>
        </Confirm>
      )}
    </>
  )
}

function UploadDetails(props: { upload: Upload; onClose: () => void }) {
  const { upload } = props
  const [error, setError] = useState<unknown>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const fetchFile = async (file: StoredFile) => {
    setError(null)
    try {
      const { blob } = await download(`/files/${file.id}`)
      saveBlob(blob, file.filename)
      setNotice(`Downloading ${file.filename}.`)
    } catch (reason) {
      setError(reason)
    }
  }
  return (
    <Dialog title={`Upload ${upload.id}`} onClose={props.onClose}>
      <dl class="facts">
        <dt>Description</dt>
        <dd>{upload.description ?? '—'}</dd>
        <dt>Visibility</dt>
        <dd>{upload.public ? 'public' : 'private'}</dd>
        <dt>Created</dt>
        <dd>{formatDate(upload.created_at)}</dd>
      </dl>
      <ListTable
        caption={<>Files</>}
        columns={['Name', 'Field', 'Type', 'Size', 'SHA-256', 'Actions']}
      >
        {upload.files.map((file) => (
          <tr key={file.id}>
            <td>{file.filename}</td>
            <td>{file.field}</td>
            <td>{file.content_type}</td>
            <td>{formatBytes(file.size)}</td>
            <td>
              <code class="hash">{file.sha256}</code>
            </td>
            <td>
              <RowAction
                text="Download"
                label={`Download ${file.filename}`}
                onClick={() => fetchFile(file)}
              />
            </td>
          </tr>
        ))}
      </ListTable>
      <Notice text={notice} />
      <ErrorNote error={error} />
      <div class="actions">
        <button type="button" onClick={props.onClose}>
          Close
        </button>
      </div>
    </Dialog>
  )
}
