import type { Config } from '../../config'
import { QueryReader } from '../../http/query'
import { DECEPTIVE_MESSAGE, hasDeceptiveCharacter } from '../../text'
import { KNOWN_FIELDS } from '../../uploads/fields'
import { cleanFilename, filenameFromDisposition } from '../../uploads/names'
import { countedBody, type RequestForm } from './multipart'

/**
 * The raw body as a form of one file: named by Content-Disposition or ?filename=, typed by
 * its name; description and public come from the query.
 */
export function rawForm(request: Request, limits: Pick<Config, 'maxUploadSize'>): RequestForm {
  const query = new QueryReader(request.url)
  const fields = new Map<string, string>()
  for (const name of KNOWN_FIELDS) {
    const value = query.string(name)
    if (value !== undefined) fields.set(name, value)
  }
  const named =
    filenameFromDisposition(request.headers.get('content-disposition')) ??
    query.string('filename') ??
    undefined
  if (named !== undefined && hasDeceptiveCharacter(named)) {
    query.reject('filename', DECEPTIVE_MESSAGE, named)
  }
  query.assertValid()
  const body = countedBody(request, limits.maxUploadSize)
  // Typed by the name's extension (Bun's table), since the body says only octet-stream.
  const contentType = named === undefined ? undefined : Bun.file(cleanFilename(named)).type
  async function* parts() {
    yield { field: 'file', filename: named, contentType, chunks: body }
  }
  return {
    parts: parts(),
    fields,
    problems: [],
    failure: null,
    close: () => void body.cancel().catch(() => {}),
  }
}
