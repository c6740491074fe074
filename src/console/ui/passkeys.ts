// The browser's side of a passkey: WebAuthn Level 3's JSON forms, so roster's options go in as
// they are answered and the credential comes out as the body /verify takes.

interface JsonCredentials {
  parseCreationOptionsFromJSON(options: unknown): PublicKeyCredentialCreationOptions
  parseRequestOptionsFromJSON(options: unknown): PublicKeyCredentialRequestOptions
}

/** Whether this browser can use passkeys at all (and the JSON forms roster speaks). */
export function passkeysSupported(): boolean {
  const api = (globalThis as { PublicKeyCredential?: Partial<JsonCredentials> }).PublicKeyCredential
  return typeof api?.parseCreationOptionsFromJSON === 'function'
}

function api(): JsonCredentials {
  if (!passkeysSupported()) {
    throw new Error('This browser cannot use passkeys here (it needs https or localhost).')
  }
  return PublicKeyCredential as unknown as JsonCredentials
}

const asJson = (credential: Credential | null): unknown => {
  if (credential === null) throw new Error('No passkey was chosen.')
  return (credential as unknown as { toJSON(): unknown }).toJSON()
}

/** Makes a passkey from roster's creation options; its toJSON(). */
export async function createPasskey(options: unknown): Promise<Record<string, unknown>> {
  const publicKey = api().parseCreationOptionsFromJSON(options)
  return asJson(await navigator.credentials.create({ publicKey })) as Record<string, unknown>
}

/** Signs roster's challenge with a passkey the person picks; its toJSON(). */
export async function signWithPasskey(options: unknown): Promise<unknown> {
  const publicKey = api().parseRequestOptionsFromJSON(options)
  return asJson(await navigator.credentials.get({ publicKey }))
}
