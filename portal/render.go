package portal

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/web"
)

// layoutData is what every template receives; Data holds the page's own values.
type layoutData struct {
	Title      string
	Nav        string
	Tenant     string
	TenantName string
	CSRF       string
	Flash      string
	// Refresh, when above zero, reloads the page every Refresh seconds in
	// browsers without JavaScript (replay progress).
	Refresh int
	// Reload, when above zero, reloads the page every Reload seconds in
	// every browser (a running receiver check).
	Reload int
	// Brand is the portal's branding (Config.Branding); render sets it.
	Brand brand
	Data  any
}

// brand is what the layout shows of Config.Branding.
type brand struct {
	ProductName string
	LogoURL     string
	SupportURL  string
	Stylesheet  bool // an accent colour is set: link brand.css
}

// pages holds one parsed template set per page file, each with the shared
// layout and partials.
type pages struct {
	sets map[string]*template.Template
}

func loadPages(asset func(name string) string) (*pages, error) {
	funcs := template.FuncMap{"asset": asset}
	maps.Copy(funcs, templateFuncs)
	files := web.Templates()
	names, err := fs.Glob(files, "*.html")
	if err != nil {
		return nil, err
	}
	shared := []string{"layout.html", "partials.html"}
	pg := &pages{sets: map[string]*template.Template{}}
	for _, name := range names {
		if slices.Contains(shared, name) {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(files, append(shared, name)...)
		if err != nil {
			return nil, fmt.Errorf("portal: parse template %s: %w", name, err)
		}
		pg.sets[strings.TrimSuffix(name, ".html")] = t
	}
	return pg, nil
}

// render writes a whole page. It renders into a buffer first, so a template
// error becomes a clean 500 rather than half a page.
func (p *Portal) render(w http.ResponseWriter, r *http.Request, status int, name string, pg layoutData) {
	t, ok := p.pages.sets[name]
	if !ok {
		p.fail(w, r, fmt.Errorf("portal: no template %q", name))
		return
	}
	b := p.cfg.Branding
	pg.Brand = brand{ProductName: b.productName(), LogoURL: b.LogoURL, SupportURL: b.SupportURL, Stylesheet: b.AccentColor != ""}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", pg); err != nil {
		p.fail(w, r, fmt.Errorf("portal: render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers an unexpected server-side error: logged with its cause, shown
// to the person without it.
func (p *Portal) fail(w http.ResponseWriter, r *http.Request, err error) {
	p.logger.ErrorContext(r.Context(), "portal request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte(`<!doctype html><title>Something went wrong</title><h1>Something went wrong</h1><p>The portal could not show this page. Try again in a moment.</p>`))
}

// pageError is an error a person caused or can act on, shown as a page with
// its status code.
type pageError struct {
	status  int
	heading string
	message string
}

func (e *pageError) Error() string { return e.heading + ": " + e.message }

// errNotFound is also the answer for another tenant's objects, so a session
// never learns whether they exist.
var errNotFound = &pageError{status: http.StatusNotFound, heading: "Not found", message: "There is nothing here. It may have been deleted, or the address is wrong."}

func badRequest(message string) error {
	return &pageError{status: http.StatusBadRequest, heading: "That did not work", message: message}
}

func (p *Portal) renderError(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var pe *pageError
	if !errors.As(err, &pe) {
		p.fail(w, r, err)
		return
	}
	pg := layoutData{Title: pe.heading, Data: struct{ Heading, Message string }{pe.heading, pe.message}}
	if s != nil {
		pg = s.page(pe.heading, "", pg.Data)
	}
	p.render(w, r, pe.status, "error", pg)
}

// flashes are the notices a redirect after a form can ask for with
// ?done=<key>. Only these fixed sentences are ever shown, so a crafted link
// cannot put words into the page.
var flashes = map[string]string{
	"created":  "Endpoint added. Reveal its signing secret below to verify the webhooks it receives.",
	"updated":  "Endpoint saved.",
	"enabled":  "Endpoint enabled. Replay to send what it missed while disabled.",
	"disabled": "Endpoint disabled. Nothing is sent to it until you enable it again.",
	"deleted":  "Endpoint deleted. Its delivery history is being erased in the background.",
	"rotated":  "Secret rotated. The new secret is below; the old one stays valid for the grace period you chose.",
	"tested":   "Test event queued. It appears in the recent deliveries below within a few seconds.",
	"resent":   "Resend queued. It goes out now, with a fresh retry window; the new attempt appears below within a few seconds.",
}

func flash(r *http.Request) string {
	return flashes[r.URL.Query().Get("done")]
}

// redirectDone redirects after a successful form with a flash notice.
func redirectDone(w http.ResponseWriter, r *http.Request, to, done string) {
	http.Redirect(w, r, to+"?done="+url.QueryEscape(done), http.StatusSeeOther)
}

var templateFuncs = template.FuncMap{
	"timeOf":     timeOf,
	"rfc3339":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"utc":        func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"codeClass":  codeClass,
	"statusText": http.StatusText,
	"host":       host,
	"has":        slices.Contains[[]string],
	"hasPrefix":  strings.HasPrefix,
}

// timeOf turns a time.Time or *time.Time into a pointer that is nil for a
// missing or zero time, so templates can write {{with timeOf .}}.
func timeOf(v any) *time.Time {
	switch t := v.(type) {
	case time.Time:
		if t.IsZero() {
			return nil
		}
		return &t
	case *time.Time:
		if t == nil || t.IsZero() {
			return nil
		}
		return t
	default:
		return nil
	}
}

func codeClass(code int) string {
	if code >= 200 && code <= 299 {
		return "ok"
	}
	return "fail"
}

// host is an endpoint URL's host, for compact lists; the full URL is on the
// endpoint's page.
func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.Host + strings.TrimSuffix(u.Path, "/")
}
