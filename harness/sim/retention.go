package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/heraldhq/herald/schedule"
)

// Chances of the retention experiment (the article's). They are separate
// from Config because they describe a sender, not the handler experiment.
const (
	// retentionLost is the chance, per attempt that reaches the receiver,
	// that its response is lost after the event was processed.
	retentionLost = 0.05
	// retentionUnreachable is the chance that a retry never reaches the
	// receiver (the sender sees a failure and keeps going).
	retentionUnreachable = 0.5
	// retentionManual is the chance, per event, of a manual resend 1 to 15
	// days after the first attempt, on schedules whose provider offers one.
	retentionManual = 0.005
)

const day = 24 * time.Hour

// Retentions are the dedupe-key lifetimes the experiment compares.
var Retentions = []struct {
	Name string
	TTL  time.Duration
}{
	{"5 min", 5 * time.Minute},
	{"24 h", day},
	{"7 days", 7 * day},
	{"30 days", 30 * day},
}

// senderSchedule is a retry schedule as one provider runs it.
type senderSchedule struct {
	name string
	// next is a fresh schedule for one event: a Policy gets its own seeded
	// jitter so every retention sees the same attempt times.
	next   func(event int) schedule.Schedule
	manual bool   // the provider offers manual resends
	last   string // when the last automatic retry runs, for the table
}

func senderSchedules(seed uint32) []senderSchedule {
	hour := time.Hour
	svix := schedule.Fixed{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * hour, 5 * hour, 10 * hour, 10 * hour}
	standard := schedule.Fixed{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * hour, 5 * hour, 10 * hour, 14 * hour, 20 * hour, 24 * hour}
	// The article's Stripe-like stand-in: attempts at 0, 1 min, 6 min, 36
	// min, 1:36, 3:36, 7:36, 15:36, 31:36, 48 h and 72 h.
	threeDay := schedule.Fixed{time.Minute, 5 * time.Minute, 30 * time.Minute, hour, 2 * hour, 4 * hour, 8 * hour, 16 * hour,
		16*hour + 24*time.Minute, 24 * hour}
	fixed := func(f schedule.Fixed) func(int) schedule.Schedule {
		return func(int) schedule.Schedule { return f }
	}
	lastOf := func(f schedule.Fixed) string {
		offsets := f.Offsets()
		return clock(offsets[len(offsets)-1])
	}
	const herald = "Herald schedule.Default()"
	return []senderSchedule{
		{name: "Svix published schedule", next: fixed(svix), last: lastOf(svix)},
		{name: "Standard Webhooks example", next: fixed(standard), last: lastOf(standard)},
		{name: "3-day window, illustrative intervals", next: fixed(threeDay), manual: true, last: lastOf(threeDay)},
		{
			name: herald,
			next: func(event int) schedule.Schedule {
				p := schedule.Default()
				p.Rand = rand.New(streamFor(seed, "ret", herald, itoa(event), "jitter"))
				return p
			},
			manual: true,
			last:   clock(schedule.DefaultWindow) + " (window end)",
		},
	}
}

// RetentionRow is one schedule's result: how many duplicate applies got
// past a dedupe store that forgets keys after each retention.
type RetentionRow struct {
	Schedule string
	// Through[i] is the number of extra applies with Retentions[i].
	Through []int
	// LastRetry is when the schedule's last automatic retry runs, h:mm:ss
	// after the first attempt.
	LastRetry string
	// Manual says whether manual resends (1 to 15 days later) were drawn.
	Manual bool
}

// Retention replays cfg.RetentionEvents events against each schedule. Each
// attempt that reaches the receiver is processed if its key is not stored
// (then stored for the retention) and loses its response with chance 0.05,
// so the sender keeps retrying; each retry fails to reach the receiver with
// chance 0.5. Providers with a resend button add a manual resend with
// chance 0.005. The faults are keyed by schedule, event and attempt, so
// every retention sees the same attempts.
func Retention(cfg Config) []RetentionRow {
	rows := make([]RetentionRow, 0, 4)
	for _, s := range senderSchedules(cfg.Seed) {
		row := RetentionRow{Schedule: s.name, Through: make([]int, len(Retentions)), LastRetry: s.last, Manual: s.manual}
		for i := range cfg.RetentionEvents {
			arrivals := arrivalsOf(cfg.Seed, s, i)
			for r, ret := range Retentions {
				row.Through[r] += processed(arrivals, ret.TTL) - 1
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// arrivalsOf returns when copies of event i reached the receiver.
func arrivalsOf(seed uint32, s senderSchedule, i int) []time.Duration {
	var arrivals []time.Duration
	sched := s.next(i)
	first := time.Unix(0, 0)
	now := first
	for n := 0; ; n++ {
		if n > 0 {
			at, ok := sched.Next(n, first, now)
			if !ok {
				break
			}
			now = at
		}
		if n > 0 && keyed(seed, "ret", s.name, itoa(i), itoa(n), "down") < retentionUnreachable {
			continue
		}
		arrivals = append(arrivals, now.Sub(first))
		if keyed(seed, "ret", s.name, itoa(i), itoa(n), "lost") >= retentionLost {
			break
		}
	}
	if s.manual && keyed(seed, "ret", s.name, itoa(i), "manual") < retentionManual {
		later := day + time.Duration(keyed(seed, "ret", s.name, itoa(i), "manualAt")*float64(14*day))
		arrivals = append(arrivals, later)
	}
	return arrivals
}

// processed counts the arrivals a dedupe store with the given retention
// lets through: a key stored when its event is processed is forgotten ttl
// later, and a copy arriving after that is processed again.
func processed(arrivals []time.Duration, ttl time.Duration) int {
	n := 0
	var expires time.Duration
	for i, at := range arrivals {
		if i == 0 || at >= expires {
			n++
			expires = at + ttl
		}
	}
	return n
}

// clock formats d as h:mm:ss.
func clock(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}
