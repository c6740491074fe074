import { sign as octokitSign } from '@octokit/webhooks-methods'
import { Webhook } from 'standardwebhooks'
import Stripe from 'stripe'

/** Secrets as each kind of sender hands them out. */
export const STANDARD_SECRET = `whsec_${Buffer.from('standard-webhooks-test-key-32byt').toString('base64')}`
export const STRIPE_SECRET = 'whsec_stripe_test_secret_1234567890'
export const GITHUB_SECRET = 'github-hook-secret'

const stripe = new Stripe('sk_test_unused')

/** Headers from the Standard Webhooks reference library. */
export function standardHeaders(
  body: string,
  secret = STANDARD_SECRET,
  id = `msg_${crypto.randomUUID()}`,
  at = new Date(),
) {
  const signature = new Webhook(secret).sign(id, at, body)
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  }
}

/** Headers from Stripe's own library (the async variant: the sync one throws under Bun). */
export async function stripeHeaders(body: string, secret = STRIPE_SECRET, at = new Date()) {
  const header = await stripe.webhooks.generateTestHeaderStringAsync({
    payload: body,
    secret,
    timestamp: Math.floor(at.getTime() / 1000),
  })
  return { 'stripe-signature': header }
}

/** Headers from Octokit's webhooks-methods (what GitHub sends). */
export async function githubHeaders(body: string, secret = GITHUB_SECRET, delivery?: string) {
  const headers: Record<string, string> = { 'x-hub-signature-256': await octokitSign(secret, body) }
  if (delivery !== undefined) headers['x-github-delivery'] = delivery
  return headers
}

export function event(
  type: string,
  object: Record<string, unknown>,
  id = `evt_${crypto.randomUUID()}`,
) {
  return JSON.stringify({ id, type, data: { object } })
}

export const ALL_SECRETS = [STANDARD_SECRET, STRIPE_SECRET, GITHUB_SECRET]
