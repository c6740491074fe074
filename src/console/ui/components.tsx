import type { ComponentChildren } from 'preact'
import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks'
import { ApiError } from './api'

/** What a page loads: the data, the error, and a way to load again. */
export function useLoad<T>(load: () => Promise<T>, inputs: readonly unknown[]) {
  const [data, setData] = useState<T | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [loading, setLoading] = useState(true)
  const [round, setRound] = useState(0)
  useEffect(() => {
    let current = true
    setLoading(true)
    load().then(
      (value) => {
        if (!current) return
        setData(value)
        setError(null)
        setLoading(false)
      },
      (reason: unknown) => {
        if (!current) return
        setError(reason)
        setLoading(false)
      },
    )
    return () => {
      current = false
    }
  }, [...inputs, round])
  const reload = useCallback(() => setRound((n) => n + 1), [])
  return { data, error, loading, reload }
}

/** An error from the API as the person should see it: the message and the request id. */
export function ErrorNote({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null
  const message = error instanceof Error ? error.message : String(error)
  const requestId = error instanceof ApiError ? error.requestId : null
  return (
    <div class="error" role="alert">
      <p>{message}</p>
      {requestId !== null && (
        <p class="request-id">
          Request id: <code>{requestId}</code>
        </p>
      )}
    </div>
  )
}

/** A polite status line for what just happened ("User created"). */
export function Notice({ text }: { text: string | null }) {
  return (
    <p class="notice" role="status" aria-live="polite">
      {text ?? ''}
    </p>
  )
}

/** A modal dialog (the native one: it traps focus and closes on Escape). */
export function Dialog(props: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const dialog = ref.current
    if (dialog !== null && !dialog.open) dialog.showModal()
    return () => dialog?.close()
  }, [])
  return (
    <dialog
      ref={ref}
      aria-labelledby="dialog-title"
      onCancel={(event) => {
        event.preventDefault()
        props.onClose()
      }}
    >
      <h2 id="dialog-title">{props.title}</h2>
      {props.children}
    </dialog>
  )
}

/** Asks before something that cannot be undone. */
export function Confirm(props: {
  title: string
  children: ComponentChildren
  action: string
  onConfirm: () => Promise<void>
  onClose: () => void
}) {
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const confirm = async () => {
    setBusy(true)
    try {
      await props.onConfirm()
      props.onClose()
    } catch (reason) {
      setError(reason)
      setBusy(false)
    }
  }
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      {props.children}
      <ErrorNote error={error} />
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={confirm}>
          {props.action}
        </button>
        <button type="button" onClick={props.onClose}>
          Cancel
        </button>
      </div>
    </Dialog>
  )
}

export interface OffsetPage {
  limit: number
  offset: number
  total: number
}

/** Previous/next for an offset-paginated list, and where we are in it. */
export function Pager(props: { page: OffsetPage; onOffset: (offset: number) => void }) {
  const { limit, offset, total } = props.page
  const last = Math.min(offset + limit, total)
  return (
    <nav class="pager" aria-label="Pages">
      <button
        type="button"
        disabled={offset === 0}
        onClick={() => props.onOffset(Math.max(0, offset - limit))}
      >
        Previous
      </button>
      <span>{total === 0 ? 'None' : `${offset + 1}–${last} of ${total}`}</span>
      <button
        type="button"
        disabled={offset + limit >= total}
        onClick={() => props.onOffset(offset + limit)}
      >
        Next
      </button>
    </nav>
  )
}

/**
 * Pages of a list read by cursor, newest first: the cursors followed so far (the last one is
 * the page shown; none: the first page), and the way back.
 */
export function useCursors() {
  const [cursors, setCursors] = useState<string[]>([])
  return {
    cursor: cursors.at(-1) ?? null,
    first: () => setCursors([]),
    older: (next: string) => setCursors((stack) => [...stack, next]),
    newer: () => setCursors((stack) => stack.slice(0, -1)),
  }
}

/** Newer/Older (and Newest, with `showNewest`) for a list read by cursor. */
export function CursorPager(props: {
  label: string
  pages: ReturnType<typeof useCursors>
  next: string | null
  showNewest?: boolean
}) {
  const { pages, next } = props
  const onFirst = pages.cursor === null
  return (
    <nav class="pager" aria-label={props.label}>
      {props.showNewest === true && (
        <button type="button" disabled={onFirst} onClick={pages.first}>
          Newest
        </button>
      )}
      <button type="button" disabled={onFirst} onClick={pages.newer}>
        Newer
      </button>
      <button
        type="button"
        disabled={next === null}
        onClick={() => {
          if (next !== null) pages.older(next)
        }}
      >
        Older
      </button>
    </nav>
  )
}

/**
 * A secret roster shows once (a new API key, a webhook endpoint's signing secret): read-only,
 * with a copy button, and what to do with it said above.
 */
export function ShownOnce(props: {
  title: string
  label: string
  copy: string
  value: string
  onClose: () => void
  children: ComponentChildren
}) {
  const [copied, setCopied] = useState<string | null>(null)
  const id = useId()
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value)
      setCopied('Copied to the clipboard.')
    } catch {
      setCopied('The browser refused the clipboard: select the text and copy it.')
    }
  }
  return (
    <Dialog title={props.title} onClose={props.onClose}>
      {props.children}
      <p class="field">
        <label for={id}>{props.label}</label>
        <input id={id} class="secret" readOnly value={props.value} />
      </p>
      <Notice text={copied} />
      <div class="actions">
        <button type="button" class="primary" onClick={copy}>
          {props.copy}
        </button>
        <button type="button" onClick={props.onClose}>
          Done
        </button>
      </div>
    </Dialog>
  )
}

/** A form's buttons: the primary submit, and Cancel. */
export function SubmitOrCancel(props: { submit: string; onCancel: () => void }) {
  return (
    <div class="actions">
      <button type="submit" class="primary">
        {props.submit}
      </button>
      <button type="button" onClick={props.onCancel}>
        Cancel
      </button>
    </div>
  )
}

/**
 * A button in a table row: its text is short ("Delete"), its accessible name says what it acts
 * on ("Delete user 3"), so a screen reader and the keyboard tests can tell the rows apart.
 */
export function RowAction(props: {
  text: string
  label: string
  onClick: () => void
  danger?: boolean
}) {
  return (
    <button
      type="button"
      class={props.danger === true ? 'danger' : undefined}
      aria-label={props.label}
      onClick={props.onClick}
    >
      {props.text}
    </button>
  )
}

/** A table's header row: one column heading per name. */
export function ColumnHeads(props: { names: readonly string[] }) {
  return (
    <thead>
      <tr>
        {props.names.map((name) => (
          <th key={name} scope="col">
            {name}
          </th>
        ))}
      </tr>
    </thead>
  )
}

/** A labelled text input; `error` is what the API said about this field, shown beside it. */
export function Field(props: {
  label: string
  name: string
  value: string
  onInput: (value: string) => void
  type?: 'text' | 'email' | 'password' | 'date'
  required?: boolean
  autoComplete?: string
  hint?: string
  error?: string
}) {
  // Unique per field: a dialog may show a field whose name the page behind it also has.
  const id = useId()
  const described = [
    props.hint === undefined ? null : `${id}-hint`,
    props.error === undefined ? null : `${id}-error`,
  ].filter((part) => part !== null)
  return (
    <p class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        // One of the text-like types; preact types each input type on its own.
        type={(props.type ?? 'text') as 'text'}
        value={props.value}
        required={props.required}
        autoComplete={props.autoComplete ?? 'off'}
        aria-invalid={props.error === undefined ? undefined : true}
        aria-describedby={described.length === 0 ? undefined : described.join(' ')}
        onInput={(event) => props.onInput((event.currentTarget as HTMLInputElement).value)}
      />
      {props.hint !== undefined && (
        <small id={`${id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
      {props.error !== undefined && (
        <small id={`${id}-error`} class="field-error">
          {props.error}
        </small>
      )}
    </p>
  )
}

export function formatDate(iso: string | null): string {
  if (iso === null) return '—'
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString()
}

export function formatBytes(size: number): string {
  if (size < 1024) return `${size} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let value = size / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(1)} ${units[unit]}`
}

export function formatDuration(seconds: number): string {
  const days = Math.floor(seconds / 86_400)
  const hours = Math.floor((seconds % 86_400) / 3600)
  const minutes = Math.floor((seconds % 3600) / 60)
  if (days > 0) return `${days} d ${hours} h`
  if (hours > 0) return `${hours} h ${minutes} min`
  if (minutes > 0) return `${minutes} min`
  return `${seconds} s`
}

/** A list's status filter (a change goes back to the first page) and its Refresh button. */
export function StatusFilter(props: {
  id: string
  statuses: readonly string[]
  value: string
  onChange: (status: string) => void
  onRefresh: () => void
}) {
  return (
    <div class="toolbar">
      <p class="field">
        <label for={props.id}>Status</label>
        <select
          id={props.id}
          value={props.value}
          onChange={(event) => props.onChange((event.currentTarget as HTMLSelectElement).value)}
        >
          <option value="">Every status</option>
          {props.statuses.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </p>
      <button type="button" onClick={props.onRefresh}>
        Refresh
      </button>
    </div>
  )
}
