package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/cmd/internal/flagenv"
	"github.com/heraldhq/herald/internal/version"
)

// defaultAPIURL is where make run's api listens.
const defaultAPIURL = "http://127.0.0.1:8080"

// env is what a command runs with: the client, its flags' values, its
// arguments and where to write.
type env struct {
	api    *client.Client
	tenant string
	json   bool
	args   []string
	flags  *flag.FlagSet
	stdout io.Writer
	stderr io.Writer
}

// parse reads a command's flags (anywhere among its arguments) and builds
// its client.
func parse(name string, cmd *command, args []string, stdout, stderr io.Writer) (*env, error) {
	fs := flagenv.New("herald " + name)
	fs.SetOutput(stderr)
	e := &env{stdout: stdout, stderr: stderr}
	var apiURL, apiKey string
	fs.StringVar(&apiURL, "api-url", defaultAPIURL, "the api's address")
	fs.Env("api-url", "HERALD_API_URL")
	fs.StringVar(&apiKey, "api-key", "", "an operator or tenant API key (hk_…)")
	fs.Env("api-key", "HERALD_API_KEY")
	fs.BoolVar(&e.json, "json", false, "print the API's JSON instead of a table")
	if cmd.tenant {
		fs.StringVar(&e.tenant, "tenant", "", "the tenant's id (required)")
		fs.Env("tenant", "HERALD_TENANT")
	}
	if cmd.flags != nil {
		cmd.flags(fs.FlagSet)
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: herald %s [flags] %s\n\n%s\n\nFlags:\n", name, cmd.usage, cmd.help)
		fs.PrintDefaults()
	}
	if err := fs.Parse(interspersed(fs.FlagSet, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err.Error()}
	}
	e.args, e.flags = fs.Args(), fs.FlagSet
	if len(e.args) != cmd.args {
		return nil, usagef("takes %d argument(s) (%s), got %d; see herald %s --help", cmd.args, cmd.usage, len(e.args), name)
	}
	if cmd.tenant && e.tenant == "" {
		return nil, usagef("--tenant is required (or set HERALD_TENANT)")
	}
	api, err := client.New(client.Config{URL: apiURL, Key: apiKey, UserAgent: "herald-cli/" + version.String()})
	if err != nil {
		return nil, fmt.Errorf("%w (--api-url, --api-key or HERALD_API_URL, HERALD_API_KEY)", err)
	}
	e.api = api
	return e, nil
}

// interspersed moves the flags among args before the positional
// arguments, so that `herald endpoints show <id> --json` reads --json as
// the flag package would only before <id>.
func interspersed(fs *flag.FlagSet, args []string) []string {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBool(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return append(append(flags, "--"), positional...)
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// printJSON writes v as indented JSON.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes a header and rows, aligned.
func (e *env) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fields writes name: value lines, aligned.
func (e *env) fields(pairs ...string) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", pairs[i], pairs[i+1])
	}
	return tw.Flush()
}

// jsonOr returns err, or prints v as JSON when there is none.
func (e *env) jsonOr(v any, err error) error {
	if err != nil {
		return err
	}
	return e.printJSON(v)
}

// value is the parsed value of the command's flag name, defined by its
// command's flags function.
func (e *env) value(name string) any { return e.flags.Lookup(name).Value.(flag.Getter).Get() }

func (e *env) str(name string) string             { return e.value(name).(string) }
func (e *env) duration(name string) time.Duration { return e.value(name).(time.Duration) }
func (e *env) boolean(name string) bool           { return e.value(name).(bool) }
