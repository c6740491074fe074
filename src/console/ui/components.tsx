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

/** How long a notice stays: long enough to read twice, short enough not to go stale. */
export const NOTICE_MS = 8000

/**
 * A polite status line for what just happened ("User created"). It clears itself after
 * NOTICE_MS, so it never describes something older than what the page now shows; the same text
 * again (a second deletion) shows again.
 */
export function Notice({ text }: { text: string | null }) {
  const [shown, setShown] = useState(text)
  useEffect(() => {
    setShown(text)
    if (text === null) return
    const timer = setTimeout(() => setShown(null), NOTICE_MS)
    return () => clearTimeout(timer)
  }, [text])
  return (
    <p class="notice" role="status" aria-live="polite">
      {shown ?? ''}
    </p>
  )
}

/** A modal dialog (the native one: it traps focus and closes on Escape). */
export function Dialog(props: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    // The control that opened the dialog gets the focus back when it goes, as a keyboard user
    // expects (the dialog is removed, not closed, so the browser would not do it).
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
    const dialog = ref.current
    if (dialog !== null && !dialog.open) dialog.showModal()
    return () => {
      dialog?.close()
      if (opener?.isConnected) opener.focus()
    }
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

/** The page sizes a list offers. */
export const PAGE_SIZES = [10, 20, 50, 100] as const

/**
 * First, previous, next and last for an offset-paginated list, where we are in it (page N of
 * M, and which rows), and, with `onLimit`, how many rows a page shows.
 */
export function Pager(props: {
  page: OffsetPage
  onOffset: (offset: number) => void
  onLimit?: (limit: number) => void
}) {
  const { limit, offset, total } = props.page
  const shownTo = Math.min(offset + limit, total)
  const pages = Math.max(1, Math.ceil(total / limit))
  const current = Math.floor(offset / limit) + 1
  const lastOffset = (pages - 1) * limit
  const sizeId = useId()
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={offset === 0} onClick={() => props.onOffset(0)}>
        First
      </button>
      <button
        type="button"
        disabled={offset === 0}
        onClick={() => props.onOffset(Math.max(0, offset - limit))}
      >
        Previous
      </button>
      <span>
        Page {current} of {pages}
        <span class="muted">
          {' '}
          ({total === 0 ? 'none' : `${offset + 1}–${shownTo} of ${total}`})
        </span>
      </span>
      <button
        type="button"
        disabled={offset + limit >= total}
        onClick={() => props.onOffset(offset + limit)}
      >
        Next
      </button>
      <button
        type="button"
        disabled={offset >= lastOffset}
        onClick={() => props.onOffset(lastOffset)}
      >
        Last
      </button>
      {props.onLimit !== undefined && (
        <span class="page-size">
          <label for={sizeId}>Per page</label>{' '}
          <select
            id={sizeId}
            value={String(limit)}
            onChange={(event) =>
              props.onLimit?.(Number((event.currentTarget as HTMLSelectElement).value))
            }
          >
            {PAGE_SIZES.map((size) => (
              <option key={size} value={String(size)}>
                {size}
              </option>
            ))}
          </select>
        </span>
      )}
    </nav>
  )
}

/**
 * A page's view state kept in the URL's fragment (`#/users?q=ada&page=2`): a reload or a
 * shared link shows the same view, and Back returns to the view before. `defaults` names the
 * keys and their values when absent (which stay out of the URL); other keys in the URL are
 * left as they are.
 */
export function useHashQuery<T extends Record<string, string>>(defaults: T) {
  const read = (): T => {
    const query = new URLSearchParams(location.hash.split('?')[1] ?? '')
    const state = { ...defaults }
    for (const name of Object.keys(defaults) as (keyof T & string)[]) {
      const value = query.get(name)
      if (value !== null) state[name] = value as T[typeof name]
    }
    return state
  }
  const [state, setState] = useState<T>(read)
  useEffect(() => {
    const follow = () => setState(read())
    // Back and Forward (popstate), and a link to the page with another query (hashchange).
    addEventListener('popstate', follow)
    addEventListener('hashchange', follow)
    return () => {
      removeEventListener('popstate', follow)
      removeEventListener('hashchange', follow)
    }
  }, [])
  const update = (changes: Partial<T>) => {
    const next = { ...state, ...changes }
    const query = new URLSearchParams()
    for (const [name, value] of Object.entries(next)) {
      if (value !== defaults[name]) query.set(name, value)
    }
    // Keys this hook does not name stay, after its own: a dialog's view beside its page's.
    for (const [name, value] of new URLSearchParams(location.hash.split('?')[1] ?? '')) {
      if (!(name in defaults)) query.append(name, value)
    }
    const path = location.hash.split('?')[0] || '#/'
    const hash = query.toString() === '' ? path : `${path}?${query}`
    if (hash !== location.hash) history.pushState(null, '', hash)
    setState(next)
  }
  return [state, update] as const
}

/**
 * An offset list's view kept in the URL: its page and page size (#/keys?page=2&size=50), with
 * `extra` view keys of the page's own (a search, a status filter). Changing any of those goes
 * back to the first page.
 */
export function useOffsetView<T extends Record<string, string>>(extra: T) {
  const [view, setView] = useHashQuery({ page: '1', size: '20', ...extra })
  const size = Number(view.size)
  const limit = (PAGE_SIZES as readonly number[]).includes(size) ? size : 20
  const page = Math.floor(Number(view.page))
  const offset = Number.isFinite(page) && page > 1 ? (page - 1) * limit : 0
  return {
    view,
    offset,
    limit,
    setOffset: (next: number) => setView({ page: String(Math.floor(next / limit) + 1) } as never),
    setLimit: (next: number) => setView({ size: String(next), page: '1' } as never),
    filter: (changes: Partial<T>) => setView({ ...changes, page: '1' } as never),
  }
}

/**
 * An offset list in creation order that the API turns around with `sort=created|-created`,
 * its order kept in the URL beside its page. `usual` is the API's own order (left out of the
 * URL and of the request); `column` is the head that toggles it.
 */
export function useChronologicalView<T extends Record<string, string>>(
  usual: 'created' | '-created',
  column: string,
  extra: T,
) {
  const list = useOffsetView({ ...extra, sort: usual })
  // A hand-edited link with another sort shows the usual order, not an error.
  const asked = list.view.sort
  const sort = asked === 'created' || asked === '-created' ? asked : usual
  const sorting: Sorting = {
    sort,
    keys: { [column]: 'created' },
    onSort: (next) => list.filter({ sort: next } as never),
  }
  return { ...list, sort, sortParam: sort === usual ? '' : `&sort=${sort}`, sorting }
}

/** What a list shows while it loads, and when it has nothing. */
export function ListState(props: { loading: boolean; empty: boolean; nothing: string }) {
  if (props.loading) {
    return (
      <p class="muted" role="status">
        Loading…
      </p>
    )
  }
  return props.empty ? <p class="empty">{props.nothing}</p> : null
}

/** Cursors in a URL's trail: no cursor roster issues holds it. */
const TRAIL_SEPARATOR = '~'

/**
 * A cursor list's view kept in the URL: its filters (`extra`) and the cursors followed from
 * the newest page (`#/activity?action=user.*&trail=evt_9~evt_5`), so a reload or a shared link
 * shows the same page, and Newer steps back along the trail as Back does. A filter change
 * starts again at the newest. `trailKey` names the trail for a list in a dialog, beside its
 * page's view.
 */
export function useCursorView<T extends Record<string, string>>(extra: T, trailKey = 'trail') {
  const [view, setView] = useHashQuery({ ...extra, [trailKey]: '' })
  const joined = view[trailKey] ?? ''
  const trail = joined === '' ? [] : joined.split(TRAIL_SEPARATOR)
  const follow = (cursors: string[]) =>
    setView({ [trailKey]: cursors.join(TRAIL_SEPARATOR) } as never)
  const pages: CursorPages = {
    cursor: trail.at(-1) ?? null,
    first: () => follow([]),
    older: (next) => follow([...trail, next]),
    newer: () => follow(trail.slice(0, -1)),
  }
  return {
    view,
    pages,
    filter: (changes: Partial<T>) => setView({ ...changes, [trailKey]: '' } as never),
  }
}

/** Where a cursor list is and how to move: what useCursorView gives. */
export interface CursorPages {
  cursor: string | null
  first: () => void
  older: (next: string) => void
  newer: () => void
}

/** Newer/Older (and Newest, with `showNewest`) for a list read by cursor. */
export function CursorPager(props: {
  label: string
  pages: CursorPages
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
/**
 * A list's sort as the API writes it (`name`, `-name`), and which columns can set it: a
 * column's key sorts ascending first, then descending on a second press.
 */
export interface Sorting {
  sort: string
  keys: Readonly<Record<string, string>>
  onSort: (sort: string) => void
}

/**
 * The column heads; with `sorting`, the sortable ones are buttons and the sorted one carries
 * aria-sort (the WAI-ARIA sortable table pattern), so a screen reader says the order; the
 * arrow is drawn by the style sheet, out of the button's name.
 */
export function ColumnHeads(props: { names: readonly string[]; sorting?: Sorting }) {
  return (
    <thead>
      <tr>
        {props.names.map((name) => (
          <SortableHead key={name} name={name} sorting={props.sorting} />
        ))}
      </tr>
    </thead>
  )
}

function SortableHead(props: { name: string; sorting: Sorting | undefined }) {
  const { name, sorting } = props
  const key = sorting?.keys[name]
  if (sorting === undefined || key === undefined) return <th scope="col">{name}</th>
  const direction =
    sorting.sort === key ? 'ascending' : sorting.sort === `-${key}` ? 'descending' : undefined
  return (
    <th scope="col" aria-sort={direction}>
      <button
        type="button"
        class="sort"
        onClick={() => sorting.onSort(direction === 'ascending' ? `-${key}` : key)}
      >
        {name}
      </button>
    </th>
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

/**
 * A table's box: on a narrow screen a wide table scrolls sideways inside it, so the box takes
 * the focus and the keyboard can scroll it too (WCAG 2.1.1, axe's scrollable-region-focusable).
 */
export function Scroller(props: { children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls must be reachable by keyboard
    <div class="scroller" tabIndex={0}>
      {props.children}
    </div>
  )
}

/** A list's table: its caption, its column heads and its rows, in a box that scrolls on a phone. */
export function ListTable(props: {
  caption?: ComponentChildren
  columns: readonly string[]
  sorting?: Sorting
  class?: string
  children: ComponentChildren
}) {
  return (
    <Scroller>
      <table class={props.class}>
        {props.caption !== undefined && <caption>{props.caption}</caption>}
        <ColumnHeads names={props.columns} sorting={props.sorting} />
        <tbody>{props.children}</tbody>
      </table>
    </Scroller>
  )
}
