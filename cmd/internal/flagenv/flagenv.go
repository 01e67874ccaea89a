// Package flagenv reads the settings of Herald's programs: flags with
// environment-variable fallbacks. For each flag the command line wins; then
// its environment variable, when it is set and not empty; then the flag's
// default, a named constant of the package the setting configures. --help
// shows that default, never the environment's value, which may be a secret.
//
// A malformed environment value fails [FlagSet.Parse] with a message that
// names the variable and the form it expects, just as a malformed flag
// fails: a typo never silently becomes the default.
//
// This is where Herald's programs read their environment; the packages they
// configure take plain Config structs.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// FlagSet is a flag.FlagSet whose flags may fall back to environment
// variables. Define flags with the embedded FlagSet's methods, then give a
// flag its variable with [FlagSet.Env].
type FlagSet struct {
	*flag.FlagSet
	fallbacks []fallback
}

// fallback ties a flag to its environment variable.
type fallback struct {
	flag, variable string
}

// New returns an empty FlagSet that returns its errors
// (flag.ContinueOnError).
func New(name string) *FlagSet {
	return &FlagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
}

// Env makes the flag named flagName fall back to the environment variable
// and names the variable in the flag's help. Like defining a flag twice, it
// panics when no flag of that name is defined.
func (f *FlagSet) Env(flagName, variable string) {
	fl := f.Lookup(flagName)
	if fl == nil {
		panic(fmt.Sprintf("flagenv: %s has no flag %q to read from %s", f.Name(), flagName, variable))
	}
	fl.Usage += " (env " + variable + ")"
	f.fallbacks = append(f.fallbacks, fallback{flag: flagName, variable: variable})
}

// Parse parses the command line, then sets every flag it did not set from
// its environment variable. It returns flag.ErrHelp for -h and --help, a
// malformed flag's error, or one error listing every malformed environment
// value.
func (f *FlagSet) Parse(args []string) error {
	if err := f.FlagSet.Parse(args); err != nil {
		return err
	}
	onCommandLine := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { onCommandLine[fl.Name] = true })
	var errs []error
	for _, fb := range f.fallbacks {
		v := os.Getenv(fb.variable)
		if v == "" || onCommandLine[fb.flag] {
			continue
		}
		value := f.Lookup(fb.flag).Value
		if err := value.Set(v); err != nil {
			errs = append(errs, malformed(fb.variable, v, value, err))
		}
	}
	return errors.Join(errs...)
}

// malformed says what is wrong with a variable's value, in the form the
// flag it backs expects.
func malformed(variable, v string, value flag.Value, err error) error {
	getter, ok := value.(flag.Getter)
	if !ok {
		return fmt.Errorf("%s=%q: %w", variable, v, err)
	}
	switch getter.Get().(type) {
	case bool:
		return fmt.Errorf("%s=%q is not true or false", variable, v)
	case int, int64, uint, uint64:
		return fmt.Errorf("%s=%q is not a whole number", variable, v)
	case float64:
		return fmt.Errorf("%s=%q is not a number", variable, v)
	case time.Duration:
		return fmt.Errorf("%s=%q is not a duration; write it like 15s, 3m or 72h", variable, v)
	}
	return fmt.Errorf("%s=%q: %w", variable, v, err)
}
