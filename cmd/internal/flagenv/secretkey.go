package flagenv

import (
	"os"

	"github.com/heraldhq/herald/internal/secretbox"
)

// SecretBox returns the box for the operator key in HERALD_SECRET_KEY
// (secretbox.EnvKey), or an error saying what is wrong with the key. The
// key has no flag: a command line is visible to every user of the machine.
func SecretBox() (*secretbox.Box, error) {
	return secretbox.Parse(os.Getenv(secretbox.EnvKey))
}
