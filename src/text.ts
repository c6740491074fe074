/**
 * Unicode bidirectional controls (U+202A–U+202E, U+2066–U+2069) and invisible characters
 * (U+200B zero width space, U+2060 word joiner, U+FEFF byte order mark). They make text show as
 * something it is not (`invoice\u202efdp.exe` displays as `invoiceexe.pdf`), so names, filenames
 * and descriptions refuse them. The joiners U+200C and U+200D stay: scripts and emoji need them.
 */
const DECEPTIVE = /[\u202A-\u202E\u2066-\u2069\u200B\u2060\uFEFF]/
const DECEPTIVE_ALL = /[\u202A-\u202E\u2066-\u2069\u200B\u2060\uFEFF]/g

export function hasDeceptiveCharacter(text: string): boolean {
  return DECEPTIVE.test(text)
}

/** The text with each such character written as `\uXXXX`, so an error can show it plainly. */
export function escapeDeceptive(text: string): string {
  return text.replace(
    DECEPTIVE_ALL,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
}

export const DECEPTIVE_MESSAGE = 'must not contain bidirectional controls or invisible characters'
