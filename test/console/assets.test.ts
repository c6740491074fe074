import { expect, test } from 'bun:test'
import {
  ASSETS_MODULE,
  assetsModule,
  bundleConsole,
  gzippedSize,
} from '../../scripts/build-console'

test('src/console/assets.gen.ts is what src/console/ui builds to (run bun run console:build)', async () => {
  const fresh = assetsModule(await bundleConsole())
  expect(await Bun.file(ASSETS_MODULE).text()).toBe(fresh)
})

test('the console stays small: under 100 KB gzipped, script and stylesheet together', async () => {
  const { script, style } = await bundleConsole()
  const gzipped = gzippedSize(script.body) + gzippedSize(style.body)
  expect(gzipped).toBeLessThan(100 * 1024)
  // The bundle must not reach for anything at run time: no absolute URLs but the SVG namespace.
  const urls = (script.body + style.body).match(/https?:\/\/[^\s"'`)]+/g) ?? []
  expect(urls.filter((url) => !url.startsWith('http://www.w3.org/'))).toEqual([])
})
