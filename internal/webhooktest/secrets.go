package webhooktest

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/signing"
)

// Secrets is an in-memory source of endpoints' signing secrets, safe for
// concurrent use. The zero value holds none.
type Secrets struct {
	mu         sync.Mutex
	byEndpoint map[uuid.UUID][]signing.Secret
}

// Set makes secrets the active secrets of endpoint.
func (s *Secrets) Set(endpoint uuid.UUID, secrets ...signing.Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byEndpoint == nil {
		s.byEndpoint = make(map[uuid.UUID][]signing.Secret)
	}
	s.byEndpoint[endpoint] = secrets
}

// ActiveSecrets returns what Set stored for endpoint, nil if nothing.
func (s *Secrets) ActiveSecrets(_ context.Context, endpoint uuid.UUID, _ time.Time) ([]signing.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byEndpoint[endpoint], nil
}
