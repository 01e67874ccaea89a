package portal

import (
	"time"

	"github.com/google/uuid"
)

// replayView is a replay and its progress.
type replayView struct {
	ID          uuid.UUID
	EndpointID  uuid.UUID
	EndpointURL string
	Since       time.Time
	Until       time.Time
	OnlyFailed  bool
	Total       int
	Enqueued    int
	Done        int
	Completed   bool
}
