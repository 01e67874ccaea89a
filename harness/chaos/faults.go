package chaos

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
)

// Fault is what the consumer's endpoint does with one request.
type Fault string

// The faults.
const (
	// NoFault: the request is verified, the event stored and 200 answered.
	NoFault Fault = "none"
	// Fail: 500 at once; nothing is stored.
	Fail Fault = "5xx"
	// Hang: the request is held until the sender gives up; nothing is
	// stored.
	Hang Fault = "timeout"
	// Drop: the event is stored, then the connection is closed without an
	// answer, so the sender does not know it arrived.
	Drop Fault = "drop"
	// Late: the event is stored, and the answer is written only after the
	// sender gave up waiting for it.
	Late Fault = "late"
	// Defer: 429 Too Many Requests with a Retry-After (deferRetryAfter),
	// so that the delivery waits for its retry: what the run resends and
	// whose jobs it ends by force (Config.Deferred).
	Defer Fault = "429"
	// Gone: 410 Gone, which disables the endpoint; answered by the second
	// endpoint until the run takes it back (Config.GoneUntil).
	Gone Fault = "410"
)

// Faults are the chances of each fault, drawn anew for every request. What
// is left is the chance of a plain 200.
type Faults struct {
	// Fail is the chance of a 500 before anything is stored.
	Fail float64
	// Hang is the chance of a request held until the sender times out,
	// with nothing stored.
	Hang float64
	// Drop is the chance that the event is stored and the connection then
	// closed without an answer.
	Drop float64
	// Late is the chance that the event is stored and answered only after
	// the sender's timeout.
	Late float64
}

// validate checks that each chance is in [0, 1) and that they leave room
// for successes.
func (f Faults) validate() error {
	for _, c := range []struct {
		name   string
		chance float64
	}{{"Fail", f.Fail}, {"Hang", f.Hang}, {"Drop", f.Drop}, {"Late", f.Late}} {
		if c.chance < 0 || c.chance >= 1 {
			return fmt.Errorf("chaos: fault chance %s is %v; want a number in [0, 1)", c.name, c.chance)
		}
	}
	if total := f.Fail + f.Hang + f.Drop + f.Late; total > 0.5 {
		return fmt.Errorf("chaos: fault chances add up to %v; keep them at or below 0.5 so deliveries mostly succeed", total)
	}
	return nil
}

// draw picks the fault of the arrival-th request (1 for the first) carrying
// webhookID. The draw is a hash of the seed, the webhook ID and the arrival
// number, so a run's faults do not depend on the order requests arrive in.
func (f Faults) draw(seed uint64, webhookID string, arrival int) Fault {
	u := unit(seed, webhookID, strconv.Itoa(arrival))
	for _, c := range []struct {
		fault  Fault
		chance float64
	}{{Fail, f.Fail}, {Hang, f.Hang}, {Drop, f.Drop}, {Late, f.Late}} {
		if u < c.chance {
			return c.fault
		}
		u -= c.chance
	}
	return NoFault
}

// unit hashes seed and parts to a number in [0, 1).
func unit(seed uint64, parts ...string) float64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return float64(mix(h.Sum64())>>11) / (1 << 53)
}

// mix is SplitMix64's finalizer: FNV's low bits are poorly spread.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
