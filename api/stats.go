package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DefaultStatsRange is the window endpoint stats cover when since is not given.
const DefaultStatsRange = 24 * time.Hour

// maxStatsBuckets bounds the series a client can ask for.
const maxStatsBuckets = 1000

// EndpointStats counts an endpoint's attempts by outcome, and its
// deliveries by status, over [Since, Until), in total and per bucket.
type EndpointStats struct {
	EndpointID uuid.UUID      `json:"endpoint_id"`
	Since      time.Time      `json:"since"`
	Until      time.Time      `json:"until"`
	Bucket     string         `json:"bucket"`
	Attempts   map[string]int `json:"attempts"`
	Deliveries map[string]int `json:"deliveries"`
	Series     []StatsBucket  `json:"series"`
}

// StatsBucket counts the attempts that started in [Start, Start+bucket).
type StatsBucket struct {
	Start    time.Time      `json:"start"`
	Attempts map[string]int `json:"attempts"`
}

func (s *Server) endpointStats(w http.ResponseWriter, r *http.Request) error {
	id, err := s.endpointID(r)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	sincePtr, untilPtr, err := timeRange(r, now.Add(-DefaultStatsRange))
	if err != nil {
		return err
	}
	since, until := *sincePtr, now
	if untilPtr != nil {
		until = *untilPtr
	}
	if !since.Before(until) {
		return invalidParam("since", "since must be earlier than until (which defaults to now)")
	}
	bucket := time.Hour
	if v := r.URL.Query().Get("bucket"); v != "" {
		bucket, err = time.ParseDuration(v)
		if err != nil || bucket < time.Minute {
			return invalidParam("bucket", "bucket must be a duration of at least 1m, such as 15m, 1h or 24h, got "+quote(v))
		}
	}
	if until.Sub(since)/bucket > maxStatsBuckets {
		return invalidParam("bucket", fmt.Sprintf("since..until holds more than %d buckets of %s; choose a larger bucket or a shorter range", maxStatsBuckets, bucket))
	}

	stats := EndpointStats{EndpointID: id, Since: since, Until: until, Bucket: bucket.String(),
		Attempts: map[string]int{}, Deliveries: map[string]int{}, Series: []StatsBucket{}}
	rows, err := s.pool.Query(r.Context(), endpointAttemptSeries, id, since, until, bucket.Seconds())
	if err != nil {
		return fmt.Errorf("endpoint %s stats: %w", id, err)
	}
	var (
		start   time.Time
		outcome string
		count   int
	)
	_, err = pgx.ForEachRow(rows, []any{&start, &outcome, &count}, func() error {
		if n := len(stats.Series); n == 0 || !stats.Series[n-1].Start.Equal(start) {
			stats.Series = append(stats.Series, StatsBucket{Start: start.UTC(), Attempts: map[string]int{}})
		}
		stats.Series[len(stats.Series)-1].Attempts[outcome] = count
		stats.Attempts[outcome] += count
		return nil
	})
	if err != nil {
		return fmt.Errorf("endpoint %s stats: %w", id, err)
	}
	if err := s.pool.QueryRow(r.Context(), endpointDeliveryCounts, id, since, until).Scan(&stats.Deliveries); err != nil {
		return fmt.Errorf("endpoint %s stats: %w", id, err)
	}
	return writeJSON(w, http.StatusOK, stats)
}
