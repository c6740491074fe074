import type { AuditSource } from '../audit/events'
import type { Transaction } from '../db/unit'
import { ScimError, scimBadRequest } from '../errors/errors'
import { FIELD_RULES, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../users/fields'
import type { UserRecord } from '../users/records'
import type { UserWrites } from '../users/store'
import type { Condition } from './filter'
import { applyPatch, patchOnVersionRead } from './patch'
import {
  EMPTY_PROFILE,
  type ScimProfileRows,
  type ScimProfileWrites,
  type ScimUserQuery,
  type ScimUserRow,
} from './profile'
import { readScimUser, type ScimUserInput, toScimUser } from './users'

/** What a SCIM write runs in: the users' rules and the profiles, in one unit of work. */
export interface ScimUnit {
  users: UserWrites
  scimProfiles: ScimProfileWrites
}

export interface ScimUsersInputs {
  users: { get(id: number): Promise<UserRecord | null> }
  profiles: ScimProfileRows
  transaction: Transaction<ScimUnit>
  hashPassword: (password: string) => Promise<string>
  /** --scim-passwords: SCIM may set the passwords of the accounts it provisioned. */
  acceptPasswords: boolean
}

/**
 * SCIM's Users (CONTRACT section 13) over roster's own users: a SCIM user is the same record,
 * written through the same rules (`UserWrites`: a taken userName or email is a conflict, a
 * deactivation ends sessions and tokens, every change is audited), with its profile written in
 * the same unit of work. A SCIM key holds only the accounts SCIM provisioned (CONTRACT section
 * 17): it changes or deletes a user only when that user has a SCIM profile (created through
 * /scim/v2) and is not an admin (checked on the locked row), and sets a password only with
 * --scim-passwords.
 */
export class ScimUsers {
  constructor(private readonly inputs: ScimUsersInputs) {}

  async get(id: number): Promise<ScimUserRow | null> {
    const user = await this.inputs.users.get(id)
    if (user === null) return null
    const profiles = await this.inputs.profiles.profilesOf([id])
    return { user, profile: profiles.get(id) ?? EMPTY_PROFILE }
  }

  /**
   * Where a user came from, for the console: whether an identity provider described it
   * through SCIM (it has a profile), and its externalId. null when there is no such user.
   */
  async provenance(
    id: number,
  ): Promise<{ provisioned: boolean; externalId: string | null } | null> {
    const [user, profiles] = await Promise.all([
      this.inputs.users.get(id),
      this.inputs.profiles.profilesOf([id]),
    ])
    if (user === null) return null
    const profile = profiles.get(id)
    return { provisioned: profile !== undefined, externalId: profile?.externalId ?? null }
  }

  list(query: ScimUserQuery): Promise<{ total: number; rows: ScimUserRow[] }> {
    return this.inputs.profiles.listUsers(query)
  }

  async create(input: ScimUserInput, by: AuditSource): Promise<ScimUserRow> {
    const passwordHash = await this.hashOf(input.password)
    return await this.inputs.transaction(async (tx) => {
      const user = await tx.users.create(
        {
          name: input.name,
          email: input.email,
          username: input.username,
          active: input.active,
          passwordHash: passwordHash ?? null,
        },
        by,
      )
      await tx.scimProfiles.put(user.id, input.profile)
      return { user, profile: input.profile }
    })
  }

  async replace(
    id: number,
    input: ScimUserInput,
    versions: readonly number[] | null,
    by: AuditSource,
  ): Promise<ScimUserRow> {
    await this.requireProvisioned(id)
    return await this.write(id, input, versions, by)
  }

  /** Stores a replacement of a user SCIM owns (the caller checked that). */
  private async write(
    id: number,
    input: ScimUserInput,
    versions: readonly number[] | null,
    by: AuditSource,
  ): Promise<ScimUserRow> {
    const passwordHash = await this.hashOf(input.password)
    return await this.inputs.transaction(async (tx) => {
      const user = await tx.users.update(
        id,
        {
          name: input.name,
          email: input.email,
          username: input.username,
          active: input.active,
          ...(passwordHash === undefined ? {} : { passwordHash }),
        },
        { versions, refuseIfAdmin: neverAnAdmin },
        by,
      )
      await tx.scimProfiles.put(id, input.profile)
      return { user, profile: input.profile }
    })
  }

  /**
   * Applies a PatchOp to the user as SCIM shows it and stores the result like a PUT, on the
   * condition that the record is still the version read (a write that came between is read
   * again, unless the client named its version with If-Match: then it is 412).
   */
  async patch(
    id: number,
    body: Record<string, unknown>,
    versions: readonly number[] | null,
    base: string,
    by: AuditSource,
  ): Promise<ScimUserRow | null> {
    return await patchOnVersionRead(
      async () => {
        // The read that the patch applies to also says whose the user is: no read of its own.
        const current = await this.get(id)
        if (current !== null && current.profile === EMPTY_PROFILE) throw notProvisioned()
        return current
      },
      (current) => current.user.version,
      {
        apply: (current) => readScimUser(applyPatch(toScimUser(current, base), body, 'user')),
        changesNothing,
        store: (input, accepted) => this.write(id, input, accepted, by),
      },
      versions,
    )
  }

  async remove(id: number, versions: readonly number[] | null, by: AuditSource): Promise<void> {
    await this.requireProvisioned(id)
    await this.inputs.transaction((tx) =>
      tx.users.remove(id, { versions, refuseIfAdmin: neverAnAdmin }, by),
    )
  }

  /**
   * 403 unless SCIM provisioned the user (it has a SCIM profile); a missing user passes, for
   * the write to answer 404 as before.
   */
  private async requireProvisioned(id: number): Promise<void> {
    const profiles = await this.inputs.profiles.profilesOf([id])
    if (profiles.has(id)) return
    if ((await this.inputs.users.get(id)) === null) return
    throw notProvisioned()
  }

  private async hashOf(password: string | undefined): Promise<string | undefined> {
    if (password === undefined) return undefined
    if (!this.inputs.acceptPasswords) {
      throw scimBadRequest(
        'invalidValue',
        'password: SCIM sets no passwords unless the server runs with --scim-passwords',
      )
    }
    if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
      throw scimBadRequest('invalidValue', `password ${FIELD_RULES.password}`)
    }
    return await this.inputs.hashPassword(password)
  }
}

/** A SCIM write to a user made outside SCIM (section 17). */
const notProvisioned = () =>
  new ScimError(
    'FORBIDDEN',
    null,
    'A SCIM key changes only the users SCIM provisioned; this one was made outside SCIM',
  )

/** What a SCIM write to an admin is refused with, on the locked row (section 17). */
const neverAnAdmin = () =>
  new ScimError(
    'FORBIDDEN',
    null,
    'A SCIM key never changes an admin: that takes an admin or a key with *',
  )

/** Whether storing `input` would leave the user as it is: no password, every field the same. */
function changesNothing({ user, profile }: ScimUserRow, input: ScimUserInput): boolean {
  return (
    input.password === undefined &&
    input.name === user.name &&
    input.email === user.email &&
    input.username === user.username &&
    input.active === user.active &&
    Bun.deepEquals(input.profile, profile, true)
  )
}

/** A list's condition when no filter is given. */
export const EVERY_USER: Condition = { kind: 'all' }
