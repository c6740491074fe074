import pkg from '../package.json'

/** Set by scripts/build.ts (`bun build --define`) in the compiled binary; absent from source. */
declare const ROSTER_BUILD:
  | { readonly commit: string; readonly date: string; readonly target: string }
  | undefined

export const VERSION: string = pkg.version

/** What `roster --version` reports: the version, and for a built binary its commit, date and target. */
export const BUILD = {
  version: VERSION,
  commit: typeof ROSTER_BUILD === 'undefined' ? 'source' : ROSTER_BUILD.commit,
  date: typeof ROSTER_BUILD === 'undefined' ? null : ROSTER_BUILD.date,
  target:
    typeof ROSTER_BUILD === 'undefined'
      ? `bun-${process.platform}-${process.arch} (from source)`
      : ROSTER_BUILD.target,
} as const

/** One line: `roster 0.1.0 (commit 5ea37e0, built 2026-11-23T19:52:12Z, bun-linux-arm64)`. */
export function versionLine(): string {
  const built = BUILD.date === null ? 'not built' : `built ${BUILD.date}`
  return `roster ${BUILD.version} (commit ${BUILD.commit}, ${built}, ${BUILD.target})`
}
