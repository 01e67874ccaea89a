// Package signing implements Standard Webhooks (https://www.standardwebhooks.com)
// signatures: the secret formats, signing a message for delivery and verifying
// one on receipt.
//
// A webhook carries three headers. webhook-id is the message ID, stable
// across retries; webhook-timestamp is the attempt time in unix seconds;
// webhook-signature is a space-separated list of signatures over the content
// "id.timestamp.body", one per active secret, so that during a key rotation a
// receiver holding either the old or the new secret can verify:
//
//	webhook-signature: v1,<base64 HMAC-SHA256> v1a,<base64 ed25519>
//
// Secrets come in three serialized forms, each base64 (standard alphabet,
// padded) behind a prefix that names the algorithm:
//
//   - whsec_ — an HMAC-SHA256 key of 24 to 64 random bytes (signature "v1").
//   - whsk_ — an ed25519 private key (signature "v1a"); signs and verifies.
//   - whpk_ — an ed25519 public key; verifies only. Give this one to receivers.
//
// Senders call [Sign] or [SignHeaders]; receivers use a [Verifier], which
// checks the signature on the raw request body with a constant-time
// comparison and rejects timestamps more than five minutes away from its
// clock in either direction. Every failure wraps one of the Err… sentinels of
// this package, so callers branch with errors.Is while the message names the
// problem.
//
// A Secret is key material. Its String method returns the serialized key,
// because that is what is stored and shown to a customer once; formatting a
// Secret through fmt or log/slog prints a redacted form instead, so a secret
// does not reach a log line by accident.
package signing
