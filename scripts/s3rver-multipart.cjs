// s3rver (a pinned dev dependency) for the tests, with the two S3 operations it lacks and
// roster's clean-up of failed uploads uses: ListMultipartUploads (GET /BUCKET?uploads&prefix=)
// and AbortMultipartUpload (DELETE /BUCKET/KEY?uploadId=), answered as AWS documents them over
// s3rver's own folder of multipart uploads in progress (BUCKET/._S3rver_uploads/UPLOAD_ID/).
// Run under Node: s3rver's listing answers an internal error under Bun.
// Usage: node scripts/s3rver-multipart.cjs ADDRESS PORT DIRECTORY BUCKET
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const S3rver = require('s3rver')

const [address, port, directory, bucket] = process.argv.slice(2)

// s3rver's file store crashes the whole process when an object's file goes while it is still
// being written (a DELETE racing a PUT the client gave up on: roster's clean-up runs after the
// answer, beside an abandoned upload). S3 answers such a race, it does not stop: log the error
// (to the file the test helper gives stderr) and keep serving every other request.
process.on('uncaughtException', (error) => {
  console.error('s3rver: kept serving after', error)
})
const server = new S3rver({
  address,
  port: Number(port),
  directory,
  silent: true,
  configureBuckets: [{ name: bucket, configs: [] }],
})

const uploadsOf = (name) => path.join(directory, name, '._S3rver_uploads')
const escapeXml = (text) => text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`)

/** The multipart uploads in progress in a bucket: { uploadId, key, initiated }. */
function uploadsIn(name) {
  const dir = uploadsOf(name)
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir).flatMap((uploadId) => {
    const keyFile = path.join(dir, uploadId, 'key')
    if (!fs.existsSync(keyFile)) return []
    const initiated = fs.statSync(path.join(dir, uploadId)).birthtime
    return [{ uploadId, key: fs.readFileSync(keyFile, 'utf8'), initiated }]
  })
}

server.middleware.unshift(async (ctx, next) => {
  const [, name = '', ...rest] = ctx.path.split('/')
  const key = rest.map(decodeURIComponent).join('/')
  if (ctx.method === 'GET' && key === '' && 'uploads' in ctx.query) {
    const prefix = String(ctx.query.prefix ?? '')
    const uploads = uploadsIn(name).filter((upload) => upload.key.startsWith(prefix))
    ctx.type = 'application/xml'
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${escapeXml(name)}</Bucket><Prefix>${escapeXml(prefix)}</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>${uploads
      .map(
        (upload) =>
          `<Upload><Key>${escapeXml(upload.key)}</Key><UploadId>${upload.uploadId}</UploadId><Initiated>${upload.initiated.toISOString()}</Initiated></Upload>`,
      )
      .join('')}</ListMultipartUploadsResult>`
    return
  }
  if (ctx.method === 'DELETE' && key !== '' && typeof ctx.query.uploadId === 'string') {
    const dir = path.join(uploadsOf(name), path.basename(ctx.query.uploadId))
    const known = fs.existsSync(path.join(dir, 'key'))
    if (known && fs.readFileSync(path.join(dir, 'key'), 'utf8') === key) {
      fs.rmSync(dir, { recursive: true, force: true })
      ctx.status = 204
      return
    }
    ctx.status = 404
    ctx.type = 'application/xml'
    ctx.body =
      '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>'
    return
  }
  await next()
})

server.run().catch((error) => {
  console.error(`s3rver did not start: ${error.message}`)
  process.exit(1)
})
