// The ceiling for a streamed upload on this stack: raw Bun.serve writing the request body to a
// file with Bun.write (no parsing, hashing, limits or database). Usage: bun bench/upload-baseline.ts <dir>
import { join } from 'node:path'

const dir = process.argv[2] ?? '.'
let n = 0
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  async fetch(request) {
    n += 1
    const size = await Bun.write(join(dir, `upload-${n}`), new Response(request.body))
    return Response.json({ size }, { status: 201 })
  },
})
console.log(`baseline listening on ${server.url}`)
