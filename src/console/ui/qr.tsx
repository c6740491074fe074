import qrcode from 'qrcode-generator'

/**
 * A QR code drawn as SVG elements (no image URL: the console's CSP allows images from roster
 * only), with the text it carries as its accessible name's companion.
 */
export function QrCode(props: { text: string; label: string }) {
  const qr = qrcode(0, 'M')
  qr.addData(props.text)
  qr.make()
  const size = qr.getModuleCount()
  const cells: string[] = []
  for (let row = 0; row < size; row++) {
    for (let column = 0; column < size; column++) {
      if (qr.isDark(row, column)) cells.push(`M${column + 4} ${row + 4}h1v1h-1z`)
    }
  }
  const side = size + 8
  return (
    <svg
      class="qr"
      role="img"
      aria-label={props.label}
      viewBox={`0 0 ${side} ${side}`}
      width={side * 5}
      height={side * 5}
      shape-rendering="crispEdges"
    >
      <rect width={side} height={side} fill="#fff" />
      <path d={cells.join('')} fill="#000" />
    </svg>
  )
}
