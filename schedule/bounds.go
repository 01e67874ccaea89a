package schedule

import (
	"cmp"
	"fmt"
	"time"
)

// The fixed limits of an endpoint's own request timeout: 1 to 60 s.
const (
	MinEndpointTimeout = time.Second
	MaxEndpointTimeout = 60 * time.Second
)

// Defaults of Bounds.
const (
	// DefaultMinBase is the shortest first-retry bound an endpoint may
	// choose: 1 s.
	DefaultMinBase = time.Second
)

// Bounds are the limits the operator sets on endpoints' own timeouts and
// retry policies: the API refuses an endpoint outside them, and the
// dispatcher clamps to its own again, so lowering a bound takes effect on
// endpoints that chose more before. The zero Bounds is ready to use.
type Bounds struct {
	// MaxTimeout is the longest request timeout an endpoint may choose.
	// Defaults to MaxEndpointTimeout (60 s), also its largest value. Zero
	// means the default.
	MaxTimeout time.Duration
	// MinBase is the shortest first-retry bound (Policy.Base) an endpoint
	// may choose. Defaults to DefaultMinBase (1 s). Zero means the default.
	MinBase time.Duration
	// MaxCap is the longest retry delay bound (Policy.Cap) an endpoint may
	// choose. Defaults to DefaultCap (10 h). Zero means the default.
	MaxCap time.Duration
	// MaxWindow is the longest retry window (Policy.Window) an endpoint
	// may choose. Defaults to DefaultWindow (72 h). Zero means the default.
	MaxWindow time.Duration
}

// WithDefaults returns b with every zero field set to its default.
func (b Bounds) WithDefaults() Bounds {
	return Bounds{
		MaxTimeout: cmp.Or(b.MaxTimeout, MaxEndpointTimeout),
		MinBase:    cmp.Or(b.MinBase, DefaultMinBase),
		MaxCap:     cmp.Or(b.MaxCap, DefaultCap),
		MaxWindow:  cmp.Or(b.MaxWindow, DefaultWindow),
	}
}

// Check reports bounds that cannot be met: a MaxTimeout outside
// [MinEndpointTimeout, MaxEndpointTimeout], a negative field, or a MinBase
// above MaxCap or MaxWindow.
func (b Bounds) Check() error {
	if b.MaxTimeout < 0 || b.MinBase < 0 || b.MaxCap < 0 || b.MaxWindow < 0 {
		return fmt.Errorf("endpoint policy bounds must not be negative (max timeout %s, min base %s, max cap %s, max window %s); zero means the default",
			b.MaxTimeout, b.MinBase, b.MaxCap, b.MaxWindow)
	}
	d := b.WithDefaults()
	if d.MaxTimeout < MinEndpointTimeout || d.MaxTimeout > MaxEndpointTimeout {
		return fmt.Errorf("the longest endpoint timeout is %s; give one from %s to %s", d.MaxTimeout, MinEndpointTimeout, MaxEndpointTimeout)
	}
	if d.MinBase > d.MaxCap || d.MinBase > d.MaxWindow {
		return fmt.Errorf("the shortest endpoint retry base (%s) is above the longest cap (%s) or window (%s); no policy would fit", d.MinBase, d.MaxCap, d.MaxWindow)
	}
	return nil
}

// Timeout returns the timeout an endpoint that chose endpoint (zero: none)
// gets: the process's global one when it chose none, else its choice
// within [MinEndpointTimeout, MaxTimeout].
func (b Bounds) Timeout(global, endpoint time.Duration) time.Duration {
	if endpoint <= 0 {
		return global
	}
	return min(max(endpoint, MinEndpointTimeout), b.WithDefaults().MaxTimeout)
}

// Policy returns global with an endpoint's own choices (zero fields: none)
// put in, each clamped to b.
func (b Bounds) Policy(global Policy, window, base, limit time.Duration) Policy {
	d := b.WithDefaults()
	p := global
	if window > 0 {
		p.Window = min(window, d.MaxWindow)
	}
	if base > 0 {
		p.Base = max(base, d.MinBase)
	}
	if limit > 0 {
		p.Cap = min(limit, d.MaxCap)
	}
	return p
}
