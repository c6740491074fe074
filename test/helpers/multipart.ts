export interface Part {
  name: string
  /** Present for file parts (may be hostile: it is written as given). */
  filename?: string
  contentType?: string
  data: string | Uint8Array<ArrayBuffer>
}

export const BOUNDARY = '----rosterTestBoundary7MA4YWxkTrZu0gW'

/**
 * A multipart/form-data body built byte by byte, so tests can send what FormData cannot: raw
 * filenames with quotes, NUL bytes or path parts, and bodies cut short.
 */
export function multipartBody(parts: Part[], boundary = BOUNDARY): Uint8Array<ArrayBuffer> {
  const chunks: Uint8Array[] = []
  const text = (value: string) => chunks.push(Buffer.from(value, 'utf8'))
  for (const part of parts) {
    text(`--${boundary}\r\n`)
    const filename = part.filename === undefined ? '' : `; filename="${part.filename}"`
    text(`Content-Disposition: form-data; name="${part.name}"${filename}\r\n`)
    if (part.contentType !== undefined) text(`Content-Type: ${part.contentType}\r\n`)
    text('\r\n')
    chunks.push(typeof part.data === 'string' ? Buffer.from(part.data, 'utf8') : part.data)
    text('\r\n')
  }
  text(`--${boundary}--\r\n`)
  return new Uint8Array(Buffer.concat(chunks))
}

export const multipartType = (boundary = BOUNDARY) => `multipart/form-data; boundary=${boundary}`

export function randomBytes(size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size)
  for (let offset = 0; offset < size; offset += 65536) {
    crypto.getRandomValues(bytes.subarray(offset, Math.min(size, offset + 65536)))
  }
  return bytes
}

export const sha256 = (data: Uint8Array | string) =>
  new Bun.CryptoHasher('sha256').update(data).digest('hex')
