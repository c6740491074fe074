import { ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA } from './names'

/** The most resources one list answer holds (ServiceProviderConfig's filter.maxResults). */
export const MAX_RESULTS = 200

/** RFC 7643 section 5: what roster's SCIM service offers, and what it does not (bulk, /Me). */
export function serviceProviderConfig(base: string) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: true },
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'API key as a bearer token',
        description: 'Authorization: Bearer <an API key with the scim scope>',
        primary: true,
      },
    ],
    meta: {
      resourceType: 'ServiceProviderConfig',
      location: `${base}/ServiceProviderConfig`,
    },
  }
}

/** RFC 7643 section 6: the User (with the enterprise extension) and Group resource types. */
export function resourceTypes(base: string) {
  return [
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      description: 'A roster user',
      schema: USER_SCHEMA,
      schemaExtensions: [{ schema: ENTERPRISE_SCHEMA, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
    },
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      description: 'A roster group',
      schema: GROUP_SCHEMA,
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
    },
  ]
}

interface AttributeOptions {
  type?: 'string' | 'boolean' | 'dateTime' | 'reference' | 'complex'
  multiValued?: boolean
  required?: boolean
  caseExact?: boolean
  mutability?: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly'
  returned?: 'always' | 'never' | 'default' | 'request'
  uniqueness?: 'none' | 'server' | 'global'
  subAttributes?: object[]
  referenceTypes?: string[]
}

function attribute(name: string, description: string, options: AttributeOptions = {}): object {
  const type = options.type ?? 'string'
  return {
    name,
    type,
    multiValued: options.multiValued ?? false,
    description,
    required: options.required ?? false,
    ...(type === 'string' || type === 'reference' ? { caseExact: options.caseExact ?? false } : {}),
    mutability: options.mutability ?? 'readWrite',
    returned: options.returned ?? 'default',
    uniqueness: options.uniqueness ?? 'none',
    ...(options.subAttributes === undefined ? {} : { subAttributes: options.subAttributes }),
    ...(options.referenceTypes === undefined ? {} : { referenceTypes: options.referenceTypes }),
  }
}

const USER_ATTRIBUTES = [
  attribute('userName', "What the user signs in with besides its email; roster's username", {
    required: true,
    uniqueness: 'server',
  }),
  attribute('externalId', "The identity provider's id for the user", { caseExact: true }),
  attribute('displayName', "roster's name for the user", {}),
  attribute('name', "The parts of the user's name", {
    type: 'complex',
    subAttributes: [
      attribute('formatted', 'The full name'),
      attribute('givenName', 'The given name'),
      attribute('familyName', 'The family name'),
    ],
  }),
  attribute('emails', "The primary email is roster's email (unique); the others are kept as sent", {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attribute('value', 'The address'),
      attribute('type', 'work, home, other'),
      attribute('display', 'A label'),
      attribute('primary', 'The one roster signs in and mails to', { type: 'boolean' }),
    ],
  }),
  attribute('active', 'False: the user cannot sign in, and its sessions ended', {
    type: 'boolean',
  }),
  attribute('password', 'Sets the password; never returned', {
    mutability: 'writeOnly',
    returned: 'never',
    caseExact: true,
  }),
  attribute('groups', 'The groups the user is in; change them through /Groups', {
    type: 'complex',
    multiValued: true,
    mutability: 'readOnly',
    subAttributes: [
      attribute('value', "The group's id", { mutability: 'readOnly' }),
      attribute('$ref', "The group's URI", {
        type: 'reference',
        mutability: 'readOnly',
        referenceTypes: ['Group'],
      }),
      attribute('type', 'direct', { mutability: 'readOnly' }),
    ],
  }),
]

const ENTERPRISE_ATTRIBUTES = [
  attribute('employeeNumber', 'The employee number', { caseExact: true }),
  attribute('department', 'The department'),
  attribute('manager', "The user's manager", {
    type: 'complex',
    subAttributes: [
      attribute('value', "The manager's id", { caseExact: true }),
      attribute('$ref', "The manager's URI", { type: 'reference', referenceTypes: ['User'] }),
    ],
  }),
]

const GROUP_ATTRIBUTES = [
  attribute('displayName', "roster's group name", { required: true, uniqueness: 'server' }),
  attribute('externalId', "The identity provider's id for the group", { caseExact: true }),
  attribute('members', 'The users in the group', {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attribute('value', "The user's id", { mutability: 'immutable', caseExact: true }),
      attribute('$ref', "The user's URI", {
        type: 'reference',
        mutability: 'immutable',
        referenceTypes: ['User'],
      }),
      attribute('display', "The user's name", { mutability: 'readOnly' }),
      attribute('type', 'User', { mutability: 'immutable' }),
    ],
  }),
]

/** RFC 7643 section 7: every attribute roster stores, with its rules. */
export function schemas(base: string) {
  const schema = (id: string, name: string, description: string, attributes: unknown[]) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id,
    name,
    description,
    attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  })
  return [
    schema(USER_SCHEMA, 'User', 'A roster user', USER_ATTRIBUTES),
    schema(
      ENTERPRISE_SCHEMA,
      'EnterpriseUser',
      'Enterprise attributes roster keeps',
      ENTERPRISE_ATTRIBUTES,
    ),
    schema(GROUP_SCHEMA, 'Group', 'A roster group', GROUP_ATTRIBUTES),
  ]
}
