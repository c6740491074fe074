/**
 * argon2id through Bun.password. Each hash or verify holds about 64 MiB while it runs, so at
 * most MAX_CONCURRENT_HASHES run at once and the rest queue: a login flood then costs time, not
 * memory.
 */
export const MAX_CONCURRENT_HASHES = 2

let running = 0
const waiting: (() => void)[] = []
const counts = { hashes: 0, verifications: 0 }

async function withSlot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= MAX_CONCURRENT_HASHES) await new Promise<void>((resolve) => waiting.push(resolve))
  else running += 1
  try {
    return await work()
  } finally {
    const next = waiting.shift()
    if (next === undefined) running -= 1
    else next()
  }
}

export function hashPassword(password: string): Promise<string> {
  counts.hashes += 1
  return withSlot(() => Bun.password.hash(password, { algorithm: 'argon2id' }))
}

/** False for a wrong password and for a hash that is not one of ours. */
export function verifyPassword(password: string, hash: string): Promise<boolean> {
  counts.verifications += 1
  return withSlot(() => Bun.password.verify(password, hash).catch(() => false))
}

/** How many hashes run and wait right now, and how many ran so far (for tests and metrics). */
export function passwordWorkload() {
  return { running, waiting: waiting.length, ...counts }
}

/** roster's own argon2id costs (Bun.password's defaults): 64 MiB, two passes. */
export const OWN_MEMORY_KIB = 65536
const OWN_TIME_COST = 2
const ARGON2ID = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=\d+\$/

/**
 * Whether a stored hash is weaker than the ones roster makes (bcrypt, argon2i or argon2d, or
 * argon2id with lower costs: imported from another system). Such a hash is replaced after the
 * next successful sign-in, when the password is known again.
 */
export function needsRehash(hash: string): boolean {
  const argon2id = ARGON2ID.exec(hash)
  if (argon2id === null) return true
  return Number(argon2id[1]) < OWN_MEMORY_KIB || Number(argon2id[2]) < OWN_TIME_COST
}
