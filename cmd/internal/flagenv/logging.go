package flagenv

import (
	"errors"
	"log/slog"
	"os"
)

// LogFormat is how a program writes its log lines to stderr: "text" or
// "json".
type LogFormat string

// DefaultLogFormat is --log-format's default.
const DefaultLogFormat LogFormat = "text"

// LogFormatVar defines --log-format in p, defaulting to DefaultLogFormat.
func (f *FlagSet) LogFormatVar(p *LogFormat) {
	*p = DefaultLogFormat
	f.Var(p, "log-format", "`format` of the log lines: text or json")
	f.Env("log-format", "HERALD_LOG_FORMAT")
}

// String returns the format's name.
func (l *LogFormat) String() string { return string(*l) }

// Set accepts text or json.
func (l *LogFormat) Set(v string) error {
	if v != "text" && v != "json" {
		return errors.New("want text or json")
	}
	*l = LogFormat(v)
	return nil
}

// Logger returns a logger writing to stderr in the format.
func (l LogFormat) Logger() *slog.Logger {
	if l == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}
