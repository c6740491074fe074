import { createHash } from 'node:crypto'

/**
 * A software authenticator for HTTP tests: what a platform authenticator does, byte for byte
 * as WebAuthn Level 3 writes it (authenticator data, a "none" attestation in CBOR, a COSE
 * ES256 key, DER signatures), with knobs for the failures a browser would not produce on its
 * own: user verification off, another origin, a counter that goes back. The browser suite uses
 * Chromium's virtual authenticator instead (test/browser).
 */

const b64url = (bytes: Uint8Array | ArrayBuffer) =>
  Buffer.from(bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : bytes).toString('base64url')

/** A minimal CBOR encoder: unsigned and negative integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, length: number): Buffer => {
    if (length < 24) return Buffer.from([(major << 5) | length])
    if (length < 256) return Buffer.from([(major << 5) | 24, length])
    if (length < 65536) return Buffer.from([(major << 5) | 25, length >> 8, length & 255])
    const out = Buffer.alloc(5)
    out[0] = (major << 5) | 26
    out.writeUInt32BE(length, 1)
    return out
  }
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value)
  if (typeof value === 'string') {
    const bytes = Buffer.from(value)
    return Buffer.concat([head(3, bytes.length), bytes])
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value])
  if (value instanceof Map) {
    const parts = [...value].flatMap(([k, v]) => [cbor(k), cbor(v)])
    return Buffer.concat([head(5, value.size), ...parts])
  }
  throw new Error(`cbor: cannot encode ${typeof value}`)
}

/** ECDSA's raw r||s (what WebCrypto signs) as the ASN.1 DER WebAuthn carries. */
function derSignature(raw: Uint8Array): Buffer {
  const integer = (bytes: Uint8Array) => {
    let start = 0
    while (start < bytes.length - 1 && bytes[start] === 0) start++
    let body = Buffer.from(bytes.subarray(start))
    if ((body[0] as number) & 0x80) body = Buffer.concat([Buffer.from([0]), body])
    return Buffer.concat([Buffer.from([0x02, body.length]), body])
  }
  const sequence = Buffer.concat([integer(raw.subarray(0, 32)), integer(raw.subarray(32))])
  return Buffer.concat([Buffer.from([0x30, sequence.length]), sequence])
}

const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest()

/** The browser's collected client data: the ceremony, the challenge, the page's origin. */
function clientDataOf(type: 'webauthn.create' | 'webauthn.get', challenge: string, knobs: Knobs) {
  const origin = knobs.origin ?? 'http://localhost:3000'
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }))
}

export interface Knobs {
  /** The page the ceremony runs on (default http://localhost:3000). */
  origin?: string
  /** The UV flag (default on): a passkey that did not verify its user. */
  userVerified?: boolean
  /** The relying party id whose hash goes into the authenticator data (default localhost). */
  rpId?: string
}

export class SoftAuthenticator {
  private counter = 0
  private constructor(
    private readonly keys: CryptoKeyPair,
    readonly credentialId: Uint8Array,
    private readonly publicJwk: JsonWebKey,
    private userHandle: string | null = null,
  ) {}

  static async create(): Promise<SoftAuthenticator> {
    const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ])) as CryptoKeyPair
    const jwk = await crypto.subtle.exportKey('jwk', keys.publicKey)
    return new SoftAuthenticator(keys, crypto.getRandomValues(new Uint8Array(32)), jwk)
  }

  get id(): string {
    return b64url(this.credentialId)
  }

  /** Sets the next signature counter (a clone replays an old one). */
  setCounter(value: number): void {
    this.counter = value
  }

  private authData(rpId: string, flags: number, attested: Buffer | null): Buffer {
    const count = Buffer.alloc(4)
    count.writeUInt32BE(this.counter)
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), count, attested ?? Buffer.alloc(0)])
  }

  private flags(knobs: Knobs, attested: boolean): number {
    const up = 0x01
    const uv = knobs.userVerified === false ? 0 : 0x04
    return up | uv | (attested ? 0x40 : 0)
  }

  /** The registration response (`toJSON()` of navigator.credentials.create's credential). */
  register(options: { challenge: string; user: { id: string } }, knobs: Knobs = {}) {
    this.userHandle = options.user.id
    const x = Buffer.from(this.publicJwk.x as string, 'base64url')
    const y = Buffer.from(this.publicJwk.y as string, 'base64url')
    const coseKey = cbor(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, x],
        [-3, y],
      ]),
    )
    const idLength = Buffer.alloc(2)
    idLength.writeUInt16BE(this.credentialId.length)
    const attested = Buffer.concat([Buffer.alloc(16), idLength, this.credentialId, coseKey])
    const authData = this.authData(knobs.rpId ?? 'localhost', this.flags(knobs, true), attested)
    const attestationObject = cbor(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    )
    return this.credential({
      clientDataJSON: b64url(clientDataOf('webauthn.create', options.challenge, knobs)),
      attestationObject: b64url(attestationObject),
      transports: ['internal'],
    })
  }

  /** The credential's JSON around its response, as toJSON() writes it. */
  private credential<R>(response: R) {
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response,
    }
  }

  /** An assertion (`toJSON()` of navigator.credentials.get's credential); counts up first. */
  async assert(options: { challenge: string }, knobs: Knobs = {}) {
    this.counter += 1
    const authData = this.authData(knobs.rpId ?? 'localhost', this.flags(knobs, false), null)
    const clientData = clientDataOf('webauthn.get', options.challenge, knobs)
    const signed = Buffer.concat([authData, sha256(clientData)])
    const raw = await crypto.subtle.sign(
      { name: 'ECDSA', hash: 'SHA-256' },
      this.keys.privateKey,
      signed,
    )
    return this.credential({
      clientDataJSON: b64url(clientData),
      authenticatorData: b64url(authData),
      signature: b64url(derSignature(new Uint8Array(raw))),
      userHandle: this.userHandle,
    })
  }
}
