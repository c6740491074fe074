import type { Config } from '../config'
import { QueryReader } from '../http/query'
import type { FileStore } from '../storage/file-store'
import { DECEPTIVE_MESSAGE, hasDeceptiveCharacter } from '../text'
import { KNOWN_FIELDS } from './fields'
import { countedBody, type IncomingUpload } from './multipart'
import { cleanContentType, cleanFilename, filenameFromDisposition } from './names'

/** The raw body as one file: named by Content-Disposition or ?filename=, typed by its name. */
export async function receiveRaw(
  request: Request,
  files: FileStore,
  limits: Pick<Config, 'maxFileSize' | 'maxUploadSize'>,
): Promise<IncomingUpload> {
  const query = new QueryReader(request.url)
  const fields = new Map<string, string>()
  for (const name of KNOWN_FIELDS) {
    const value = query.string(name)
    if (value !== undefined) fields.set(name, value)
  }
  const named =
    filenameFromDisposition(request.headers.get('content-disposition')) ?? query.string('filename')
  if (named !== undefined && named !== null && hasDeceptiveCharacter(named)) {
    query.reject('filename', DECEPTIVE_MESSAGE, named)
  }
  query.assertValid()
  const filename = cleanFilename(named)
  const { maxFileSize, maxUploadSize } = limits
  const received = await files.receive(countedBody(request, maxUploadSize), {
    maxFileSize,
    budget: { remaining: maxUploadSize },
  })
  // Typed by the name's extension (Bun's table), since the body says only octet-stream.
  const guessed = named === null || named === undefined ? '' : Bun.file(filename).type
  return {
    files: [{ ...received, field: 'file', filename, contentType: cleanContentType(guessed) }],
    fields,
  }
}
