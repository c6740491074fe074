// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f]/

/**
 * Whether text holds a C0 control character or DEL. Identifiers and query parameters never
 * need one, and PostgreSQL's text cannot even hold U+0000.
 */
export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text)
}
