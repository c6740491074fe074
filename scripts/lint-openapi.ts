// Lints the OpenAPI document roster publishes with the tools people feed it to: Redocly's
// recommended rules (as errors) and Spectral's spectral:oas. Exits non-zero on any problem.
// Usage: bun scripts/lint-openapi.ts [path to a roster binary; default: the source]
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
const binary = Bun.argv[2]
const command =
  binary === undefined ? ['bun', join(root, 'src/main.ts'), 'openapi'] : [binary, 'openapi']
const made = Bun.spawnSync(command, { cwd: root, stderr: 'inherit' })
if (made.exitCode !== 0) {
  console.error(`roster openapi failed (exit ${made.exitCode})`)
  process.exit(1)
}
mkdirSync(join(root, '.scratch'), { recursive: true })
// The path .redocly.lint-ignore.yaml names.
const document = '.scratch/roster.openapi.json'
writeFileSync(join(root, document), made.stdout)

const bin = (name: string) => join(root, 'node_modules/.bin', name)
const runs = [
  [bin('redocly'), 'lint', '--config', 'redocly.yaml', document],
  [bin('spectral'), 'lint', '-r', '.spectral.yaml', '--fail-severity=warn', document],
]
let failed = false
for (const run of runs) {
  const result = Bun.spawnSync(run, { cwd: root, stdout: 'inherit', stderr: 'inherit' })
  if (result.exitCode !== 0) failed = true
}
process.exit(failed ? 1 : 0)
