package schedule_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/heraldhq/herald/schedule"
)

// A seeded policy replays the same schedule on every run. Retry n waits a
// random delay below min(Cap, Base·2^(n−1)); the last retry is moved to the
// window's end.
func ExamplePolicy_Next() {
	p := schedule.Policy{
		Base:   time.Second,
		Cap:    8 * time.Second,
		Window: 20 * time.Second,
		Rand:   rand.New(rand.NewPCG(1, 2)),
	}
	first := time.Date(2026, 10, 23, 12, 0, 0, 0, time.UTC)
	now := first
	for attempt := 1; ; attempt++ {
		at, ok := p.Next(attempt, first, now)
		if !ok {
			fmt.Printf("exhausted after %d retries\n", attempt-1)
			return
		}
		fmt.Printf("retry %-2d waits below %-2s runs at +%s\n", attempt, p.Ceiling(attempt), at.Sub(first).Truncate(100*time.Millisecond))
		now = at
	}
	// Output:
	// retry 1  waits below 1s runs at +700ms
	// retry 2  waits below 2s runs at +2s
	// retry 3  waits below 4s runs at +5.1s
	// retry 4  waits below 8s runs at +11.5s
	// retry 5  waits below 8s runs at +13.3s
	// retry 6  waits below 8s runs at +13.7s
	// retry 7  waits below 8s runs at +17.7s
	// retry 8  waits below 8s runs at +20s
	// exhausted after 8 retries
}

// A response with Retry-After postpones the retry to at least what the
// receiver asked for, clamped to MaxRetryAfter (1 h by default).
func ExamplePolicy_NextAfter() {
	p := schedule.Default()
	first := time.Date(2026, 10, 23, 12, 0, 0, 0, time.UTC)
	now := first.Add(10 * time.Second)

	// A missing or malformed header parses as 0, which NextAfter ignores.
	wait, _ := schedule.ParseRetryAfter("120", now)
	at, _ := p.NextAfter(1, first, now, wait)
	fmt.Println("retry at", at.Format(time.TimeOnly))

	wait, _ = schedule.ParseRetryAfter("Sat, 24 Oct 2026 12:00:00 GMT", now)
	at, _ = p.NextAfter(1, first, now, wait)
	fmt.Println("retry at", at.Format(time.TimeOnly), "(a day asked, clamped to 1 h)")
	// Output:
	// retry at 12:02:10
	// retry at 13:00:10 (a day asked, clamped to 1 h)
}

// ParseRetryAfter accepts delay-seconds and HTTP-dates and rejects the rest.
func ExampleParseRetryAfter() {
	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	for _, v := range []string{"120", "Wed, 21 Oct 2026 07:30:00 GMT", "-1", "soon"} {
		wait, ok := schedule.ParseRetryAfter(v, now)
		fmt.Printf("%q: %s %t\n", v, wait, ok)
	}
	// Output:
	// "120": 2m0s true
	// "Wed, 21 Oct 2026 07:30:00 GMT": 2m0s true
	// "-1": 0s false
	// "soon": 0s false
}

// Fixed expresses a published schedule, here Svix's: the last retry runs
// 27:35:05 after the first attempt.
func ExampleFixed() {
	svix := schedule.Fixed{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
		2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	offsets := svix.Offsets()
	fmt.Println(len(svix), "retries, last at", offsets[len(offsets)-1])
	// Output:
	// 7 retries, last at 27h35m5s
}
