package portal

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultProductName is what the portal calls itself when Branding sets no
// ProductName.
const DefaultProductName = "Webhooks"

// MaxProductNameLength is the longest product name accepted, in characters.
const MaxProductNameLength = 64

// Branding is how the portal presents itself: in the page titles, its
// header, its links colour and buttons. The zero value is Herald's own
// look. Check it with Validate.
type Branding struct {
	// ProductName replaces "Webhooks" in page titles and the header, 1 to
	// MaxProductNameLength printable characters. Empty means
	// DefaultProductName.
	ProductName string
	// AccentColor is the colour of links and primary buttons, in hex:
	// "#2f5bd3" or "#25d". Empty means the portal's own blue.
	AccentColor string
	// LogoURL is an https URL of an image shown in the header instead of
	// the product name (which stays its text alternative). The portal's
	// Content-Security-Policy allows images from its origin. Empty means
	// no logo.
	LogoURL string
	// SupportURL is an https URL the header links to as "Support". Empty
	// means no link.
	SupportURL string
}

var hexColor = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// Validate checks every field and says what is wrong with the first bad one
// and how to fix it. Its errors name the field as fieldPrefix+name (a flag
// or a JSON field, say).
func (b Branding) Validate(fieldPrefix string) error {
	if b.ProductName != "" {
		n := utf8.RuneCountInString(b.ProductName)
		if !utf8.ValidString(b.ProductName) || n > MaxProductNameLength || strings.TrimSpace(b.ProductName) == "" ||
			strings.IndexFunc(b.ProductName, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			return fmt.Errorf("%sproduct-name %q must be 1 to %d printable characters, like \"Acme webhooks\"", fieldPrefix, b.ProductName, MaxProductNameLength)
		}
	}
	if b.AccentColor != "" && !hexColor.MatchString(b.AccentColor) {
		return fmt.Errorf("%saccent-color %q is not a colour; give it in hex, like #2f5bd3", fieldPrefix, b.AccentColor)
	}
	for _, f := range []struct{ name, value string }{{"logo-url", b.LogoURL}, {"support-url", b.SupportURL}} {
		if f.value == "" {
			continue
		}
		u, err := url.Parse(f.value)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return fmt.Errorf("%s%s %q is not an https URL; give an absolute https:// address, like https://example.com/logo.svg", fieldPrefix, f.name, f.value)
		}
	}
	return nil
}

// productName is ProductName or DefaultProductName.
func (b Branding) productName() string {
	if b.ProductName == "" {
		return DefaultProductName
	}
	return b.ProductName
}

// logoOrigin is the origin the logo is loaded from, for the
// Content-Security-Policy's img-src; empty without a logo.
func (b Branding) logoOrigin() string {
	u, err := url.Parse(b.LogoURL)
	if b.LogoURL == "" || err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// brandStylesheet serves the accent colour as a stylesheet of the portal's
// own origin, which its Content-Security-Policy allows (no inline styles).
// The colour is a checked hex value, so nothing else can reach the CSS.
func (p *Portal) brandStylesheet(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	if c := p.cfg.Branding.AccentColor; c != "" {
		fmt.Fprintf(w, ":root { --accent: %s; }\n", c)
	}
}
