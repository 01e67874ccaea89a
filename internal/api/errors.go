package api

import (
	"errors"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/store"
)

// domainProblem maps the errors of the packages the API drives to problems.
// It returns nil for errors it does not know.
func (s *Server) domainProblem(err error) *Problem {
	var verr *store.ValidationError
	switch {
	case errors.As(err, &verr):
		return invalid(verr.Field, verr.Field+" "+verr.Problem)
	case errors.Is(err, store.ErrAlreadyExists):
		return conflict("it already exists: " + err.Error())
	case errors.Is(err, store.ErrNotFound):
		return notFound("the tenant or endpoint")
	case errors.Is(err, auth.ErrTenantNotFound):
		return notFound("the tenant")
	}
	return nil
}
