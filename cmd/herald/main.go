// Command herald manages Herald through its management API: tenants,
// endpoints, publishing, the delivery log (and following it live),
// resends, replays, portal links and the receiver check.
//
//	herald endpoints list --tenant acme
//	herald messages tail --tenant acme
//
// It reads the api's address from --api-url or HERALD_API_URL and the key
// from --api-key or HERALD_API_KEY. Output is a table for people, or the
// API's JSON with --json. Exit codes: 0 done; 1 the API refused or failed
// the request (its sentence and field are printed); 2 the command line is
// wrong; 3 the api could not be reached; 4 the receiver check saw an
// answer that was not 2xx.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/heraldhq/herald/client"
)

// Exit codes.
const (
	exitOK          = 0
	exitAPI         = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitCheckFailed = 4
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one verb of the CLI.
type command struct {
	// usage is the arguments after the verb, e.g. "<endpoint-id>".
	usage string
	help  string
	// tenant says the command needs --tenant.
	tenant bool
	// flags defines the command's own flags.
	flags func(fs *flag.FlagSet)
	// args is how many positional arguments it takes.
	args int
	run  func(ctx context.Context, e *env) error
}

// groups are the CLI's commands by noun; a group with the verb "" is run
// as `herald <group>`.
var groups = map[string]map[string]*command{
	"tenants":     tenantCommands,
	"endpoints":   endpointCommands,
	"messages":    messageCommands,
	"publish":     {"": publishCommand},
	"resend":      {"": resendCommand},
	"replay":      {"": replayCommand},
	"portal-link": {"": portalLinkCommand},
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// errCheckFailed ends a receiver check in which a step's answer was not
// 2xx; the report has been printed.
var errCheckFailed = errors.New("the receiver check saw an answer that was not 2xx; see the report above")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	group, ok := groups[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "herald: unknown command %q; run herald help for the list\n", args[0])
		return exitUsage
	}
	name, rest := args[0], args[1:]
	cmd, ok := group[""]
	if !ok {
		if len(rest) == 0 || group[rest[0]] == nil {
			fmt.Fprintf(stderr, "herald %s: give one of: %s\n", name, strings.Join(verbs(group), ", "))
			return exitUsage
		}
		name, cmd, rest = name+" "+rest[0], group[rest[0]], rest[1:]
	}
	e, err := parse(name, cmd, rest, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err == nil {
		err = cmd.run(ctx, e)
	}
	return report(name, err, stderr)
}

// report prints err and returns the exit code it means.
func report(name string, err error, stderr io.Writer) int {
	var (
		usage       *usageError
		apiErr      *client.APIError
		unreachable *client.UnreachableError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage), errors.Is(err, client.ErrConfig):
		fmt.Fprintf(stderr, "herald %s: %v\n", name, err)
		return exitUsage
	case errors.As(err, &apiErr):
		fmt.Fprintf(stderr, "herald %s: %s\n", name, apiErr.Detail)
		if apiErr.Field != "" {
			fmt.Fprintf(stderr, "  field: %s\n", apiErr.Field)
		}
		fmt.Fprintf(stderr, "  (HTTP %d", apiErr.Status)
		if apiErr.RequestID != "" {
			fmt.Fprintf(stderr, ", request %s", apiErr.RequestID)
		}
		fmt.Fprintln(stderr, ")")
		return exitAPI
	case errors.As(err, &unreachable):
		fmt.Fprintf(stderr, "herald %s: %v\n  check --api-url (HERALD_API_URL) and that the api is running\n", name, err)
		return exitUnreachable
	case errors.Is(err, errCheckFailed):
		fmt.Fprintf(stderr, "herald %s: %v\n", name, err)
		return exitCheckFailed
	case errors.Is(err, context.Canceled):
		return exitOK
	}
	fmt.Fprintf(stderr, "herald %s: %v\n", name, err)
	return exitAPI
}

func verbs(group map[string]*command) []string {
	var out []string
	for v := range group {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `herald manages Herald through its management API.

Usage: herald <command> [flags] [arguments]

`)
	var names []string
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		for _, v := range verbs(groups[g]) {
			c := groups[g][v]
			line := strings.Join(strings.Fields(g+" "+v+" "+c.usage), " ")
			fmt.Fprintf(w, "  %-44s %s\n", line, c.help)
		}
	}
	fmt.Fprint(w, `
Every command takes --api-url (HERALD_API_URL, default `+defaultAPIURL+`),
--api-key (HERALD_API_KEY) and --json (the API's JSON instead of a table);
those about one tenant take --tenant (HERALD_TENANT). herald <command> --help
lists a command's flags.

Exit codes: 0 done; 1 the API refused or failed the request (its sentence
and the field at fault are printed); 2 the command line is wrong; 3 the api
could not be reached; 4 the receiver check saw an answer that was not 2xx.
`)
}
