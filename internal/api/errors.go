package api

import (
	"errors"

	"github.com/heraldhq/herald/internal/auth"
)

// domainProblem maps the errors of the packages the API drives to problems.
// It returns nil for errors it does not know.
func (s *Server) domainProblem(err error) *Problem {
	switch {
	case errors.Is(err, auth.ErrTenantNotFound):
		return notFound("the tenant")
	}
	return nil
}
