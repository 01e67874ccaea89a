package store

import (
	"errors"

	"github.com/heraldhq/herald/filter"
	"github.com/heraldhq/herald/outbox"
)

// MaxEndpointChannels is the most channels an endpoint subscribes to: 100,
// as migrations/0034_channels_and_filters.sql documents.
const MaxEndpointChannels = 100

// checkFilter refuses a filter that package filter does not parse, naming
// the character where it went wrong: a *ValidationError for the field
// "filter" whose Err is the *filter.SyntaxError, so that callers can show
// the position. The empty filter is no filter.
func checkFilter(src string) error {
	if src == "" {
		return nil
	}
	if err := checkText("filter", src, filter.MaxLength); err != nil {
		return err
	}
	if _, err := filter.Parse(src); err != nil {
		var syntax *filter.SyntaxError
		if errors.As(err, &syntax) {
			return &ValidationError{Field: "filter", Problem: "does not parse " + syntax.Error() + "; see the filter language in the README", Err: syntax}
		}
		return &ValidationError{Field: "filter", Problem: err.Error(), Err: err}
	}
	return nil
}

// normalizeChannels checks each channel name (outbox.ValidateChannel) and
// drops repeats, keeping the caller's order. The result is never nil: an
// empty list means every message, with or without channels.
func normalizeChannels(channels []string) ([]string, error) {
	if len(channels) > MaxEndpointChannels {
		return nil, invalid("channels", "has %d entries; an endpoint subscribes to at most %d (an empty list receives every message)", len(channels), MaxEndpointChannels)
	}
	out := make([]string, 0, len(channels))
	seen := make(map[string]bool, len(channels))
	for i, c := range channels {
		if err := outbox.ValidateChannel(c); err != nil {
			return nil, invalid("channels", "entry %d: %v", i, err)
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}
