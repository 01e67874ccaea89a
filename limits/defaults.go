package limits

// DefaultMaxEndpoints is the default cap on a tenant's endpoints
// (store.Config.MaxEndpointsPerTenant, cmd/api --max-endpoints-per-tenant).
// Each endpoint may hold up to the dispatcher's per-endpoint in-flight cap
// of workers while it hangs, so the cap bounds what one tenant's dead
// endpoints can hold; a tenant that needs more gets an override.
const DefaultMaxEndpoints = 50

// DefaultCredentialShare is the default of [Config.CredentialShare]: a
// credential may use half of its tenant's limit.
const DefaultCredentialShare = 0.5

// DefaultRate returns the default limit of a tenant's action (cmd/api's
// --publish-rate, --publish-burst and the like):
//
//	publish      100 a second, bursts of 200
//	resend        10 a second, bursts of 100 (a script resending a list)
//	replay        one every 10 s, bursts of 10 (each may requeue days of deliveries)
//	test_event     1 a second, bursts of 10
func DefaultRate(a Action) Rate {
	switch a {
	case Publish:
		return Rate{PerSecond: 100, Burst: 200}
	case Resend:
		return Rate{PerSecond: 10, Burst: 100}
	case Replay:
		return Rate{PerSecond: 0.1, Burst: 10}
	case TestEvent:
		return Rate{PerSecond: 1, Burst: 10}
	}
	return Rate{}
}
