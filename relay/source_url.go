package relay

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/heraldhq/herald/internal/database"
)

// SourceURL is one producer database to relay from, as an operator names
// it: cmd/dispatcher's --source-database-url name=URL.
type SourceURL struct {
	// Name identifies the source in logs and in herald.messages.source:
	// 1 to 63 lower-case letters, digits, "_" and "-", starting with a
	// letter (ValidateSourceName).
	Name string
	// URL is the Postgres URL or DSN of the producer's database.
	URL string
}

// sourceNamePattern is the rule ValidateSourceName checks.
var sourceNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// ValidateSourceName checks a source's name: 1 to 63 lower-case letters,
// digits, "_" and "-", starting with a letter, for example "billing".
func ValidateSourceName(name string) error {
	if !sourceNamePattern.MatchString(name) {
		return fmt.Errorf("source name %q is not valid; use 1 to 63 lower-case letters, digits, \"_\" and \"-\", starting with a letter, for example billing", name)
	}
	return nil
}

// ParseSourceURL reads name=URL, for example
// billing=postgres://postgres@127.0.0.1:5432/billing. The error names what
// is wrong and never repeats the URL, which may hold a password.
func ParseSourceURL(value string) (SourceURL, error) {
	name, url, ok := strings.Cut(value, "=")
	if !ok || strings.Contains(name, "://") || strings.Contains(name, " ") {
		return SourceURL{}, fmt.Errorf("a source is name=URL, for example billing=postgres://postgres@127.0.0.1:5432/billing; this one has no name before \"=\"")
	}
	if err := ValidateSourceName(name); err != nil {
		return SourceURL{}, err
	}
	if strings.TrimSpace(url) == "" {
		return SourceURL{}, fmt.Errorf("source %s has no URL after \"=\"; write %s=postgres://user@host:5432/database", name, name)
	}
	if _, err := database.ParseURL(url); err != nil {
		return SourceURL{}, fmt.Errorf("source %s: %w", name, err)
	}
	return SourceURL{Name: name, URL: url}, nil
}
