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
	Headers []headerRow
}

func readOptionsForm(r *http.Request) optionsForm {
	f := optionsForm{
		Filter:   strings.TrimSpace(r.PostFormValue("filter")),
		Channels: r.PostFormValue("channels"),
		Timeout:  strings.TrimSpace(r.PostFormValue("timeout_seconds")),
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

// timeout is the typed timeout; a problem for the form when it is not a
// whole number of seconds.
func (f optionsForm) timeout() (time.Duration, *store.ValidationError) {
	if f.Timeout == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(f.Timeout)
	if err != nil || n < 0 {
		return 0, &store.ValidationError{Field: "timeout_seconds", Problem: "must be a whole number of seconds, such as 30; leave it empty for the default"}
	}
	return time.Duration(n) * time.Second, nil
}
