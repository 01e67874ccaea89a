package portal

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
)

// spareHeaderRows is how many empty header rows the endpoint form offers
// beyond the endpoint's headers, up to store.MaxEndpointHeaders.
const spareHeaderRows = 2

// headerRow is one custom header row of the endpoint form.
type headerRow struct {
	Index int
	Name  string
	// Value is empty for a secret header read from the store: secret
	// values are write-only, and an empty one keeps the stored value.
	Value  string
	Secret bool
	// Stored marks a secret header the endpoint already has.
	Stored bool
}

// optionsForm is the endpoint form's filter, channels, timeout and custom
// headers, as typed.
type optionsForm struct {
	Filter   string
	Channels string
	// Timeout is the request timeout in seconds; empty means the
	// dispatcher's.
	Timeout string
	// RetryWindow (hours), RetryBase and RetryCap (seconds) are the
	// endpoint's retry policy (store.RetryPolicy); an empty one means
	// the dispatcher's.
	RetryWindow, RetryBase, RetryCap string
	Headers                          []headerRow
}

func readOptionsForm(r *http.Request) optionsForm {
	f := optionsForm{
		Filter:   strings.TrimSpace(r.PostFormValue("filter")),
		Channels: r.PostFormValue("channels"),
		Timeout:  strings.TrimSpace(r.PostFormValue("timeout_seconds")),

		RetryWindow: strings.TrimSpace(r.PostFormValue("retry_window_hours")),
		RetryBase:   strings.TrimSpace(r.PostFormValue("retry_base_seconds")),
		RetryCap:    strings.TrimSpace(r.PostFormValue("retry_cap_seconds")),
	}
	for i := range store.MaxEndpointHeaders {
		n := strconv.Itoa(i)
		row := headerRow{
			Name:   strings.TrimSpace(r.PostFormValue("header_name_" + n)),
			Value:  r.PostFormValue("header_value_" + n),
			Secret: r.PostFormValue("header_secret_"+n) != "",
			Stored: r.PostFormValue("header_stored_"+n) != "",
		}
		if row.Name == "" && row.Value == "" {
			continue
		}
		row.Index = len(f.Headers)
		f.Headers = append(f.Headers, row)
	}
	return f.withSpareRows()
}

// optionsFormFor fills the form from an endpoint as the store shows it.
func optionsFormFor(e store.Endpoint) optionsForm {
	f := optionsForm{Filter: e.Filter, Channels: strings.Join(e.Channels, ", ")}
	if e.Timeout > 0 {
		f.Timeout = strconv.FormatInt(int64(e.Timeout/time.Second), 10)
	}
	f.RetryWindow = formatIn(e.RetryPolicy.Window, time.Hour)
	f.RetryBase = formatIn(e.RetryPolicy.Base, time.Second)
	f.RetryCap = formatIn(e.RetryPolicy.Cap, time.Second)
	for i, h := range e.Headers {
		row := headerRow{Index: i, Name: h.Name, Value: h.Value, Secret: h.Secret, Stored: h.Secret}
		if h.Secret {
			row.Value = ""
		}
		f.Headers = append(f.Headers, row)
	}
	return f.withSpareRows()
}

// withSpareRows adds the empty rows new headers are typed into.
func (f optionsForm) withSpareRows() optionsForm {
	for range spareHeaderRows {
		if len(f.Headers) >= store.MaxEndpointHeaders {
			break
		}
		f.Headers = append(f.Headers, headerRow{Index: len(f.Headers)})
	}
	return f
}

// channels is the typed channels, split at commas.
func (f optionsForm) channels() []string {
	out := []string{}
	for _, c := range strings.Split(f.Channels, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// headers is the typed headers, without the empty rows.
func (f optionsForm) headers() []store.EndpointHeader {
	out := []store.EndpointHeader{}
	for _, h := range f.Headers {
		if h.Name == "" && h.Value == "" {
			continue
		}
		out = append(out, store.EndpointHeader{Name: h.Name, Value: h.Value, Secret: h.Secret})
	}
	return out
}

// formatIn writes d in unit, up to three decimals ("1.5"); empty for
// zero, the dispatcher's default.
func formatIn(d, unit time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatFloat(float64(d)/float64(unit), 'f', -1, 64)
}

// policy is the typed timeout and retry policy; a problem for the form
// when one is not a number. Their bounds are the store's to check.
func (f optionsForm) policy() (time.Duration, store.RetryPolicy, *store.ValidationError) {
	if f.Timeout != "" {
		if n, err := strconv.Atoi(f.Timeout); err != nil || n < 0 {
			return 0, store.RetryPolicy{}, &store.ValidationError{Field: "timeout_seconds", Problem: "must be a whole number of seconds, such as 30; leave it empty for the default"}
		}
	}
	timeout, _ := parseIn(f.Timeout, time.Second)
	var p store.RetryPolicy
	for _, v := range []struct {
		text, what, example string
		unit                time.Duration
		to                  *time.Duration
	}{
		{f.RetryWindow, `"Retry for" (hours)`, "72", time.Hour, &p.Window},
		{f.RetryBase, `"First retry within" (seconds)`, "5", time.Second, &p.Base},
		{f.RetryCap, `"Longest wait between retries" (seconds)`, "3600", time.Second, &p.Cap},
	} {
		d, ok := parseIn(v.text, v.unit)
		if !ok {
			return 0, store.RetryPolicy{}, &store.ValidationError{Field: "retry_policy", Problem: v.what + " must be a positive number, such as " + v.example + "; leave it empty for the default"}
		}
		*v.to = d
	}
	return timeout, p, nil
}

// parseIn reads text as a non-negative number of unit; empty is zero.
func parseIn(text string, unit time.Duration) (time.Duration, bool) {
	if text == "" {
		return 0, true
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || n < 0 || n > float64(1<<62)/float64(unit) {
		return 0, false
	}
	return time.Duration(n * float64(unit)), true
}
