package flagenv

import "github.com/heraldhq/herald/schedule"

// EndpointBoundsVar defines the bounds on endpoints' own timeouts and retry
// policies in b (see schedule.Bounds): the api refuses an endpoint outside
// them, the dispatcher clamps to them. Give both programs the same.
func (f *FlagSet) EndpointBoundsVar(b *schedule.Bounds) {
	f.DurationVar(&b.MaxTimeout, "endpoint-max-timeout", schedule.MaxEndpointTimeout,
		"longest request timeout an endpoint may choose (timeout_seconds), at most 60s; the dispatcher's job timeout is twice the longer of this and --timeout")
	f.Env("endpoint-max-timeout", "HERALD_ENDPOINT_MAX_TIMEOUT")
	f.DurationVar(&b.MinBase, "endpoint-min-retry-base", schedule.DefaultMinBase,
		"shortest first-retry delay bound (retry_policy.base_seconds) an endpoint may choose")
	f.Env("endpoint-min-retry-base", "HERALD_ENDPOINT_MIN_RETRY_BASE")
	f.DurationVar(&b.MaxCap, "endpoint-max-retry-cap", schedule.DefaultCap,
		"longest retry delay bound (retry_policy.cap_seconds) an endpoint may choose")
	f.Env("endpoint-max-retry-cap", "HERALD_ENDPOINT_MAX_RETRY_CAP")
	f.DurationVar(&b.MaxWindow, "endpoint-max-retry-window", schedule.DefaultWindow,
		"longest retry window (retry_policy.window_seconds) an endpoint may choose")
	f.Env("endpoint-max-retry-window", "HERALD_ENDPOINT_MAX_RETRY_WINDOW")
}
