package sim

import (
	"strconv"
	"strings"
)

// stream is the article's seeded generator (mulberry32): a 32-bit state
// advanced by a constant and mixed into a number in [0, 1). Using the same
// generator and seed reproduces the article's synthetic events exactly, so
// its counts and ours describe the same input.
type stream uint32

// next returns the next number in [0, 1).
func (s *stream) next() float64 {
	return float64(s.next32()) / (1 << 32)
}

func (s *stream) next32() uint32 {
	*s += 0x6d2b79f5
	a := uint32(*s)
	t := (a ^ a>>15) * (a | 1)
	t = (t + (t^t>>7)*(t|61)) ^ t
	return t ^ t>>14
}

// Uint64 makes a stream a math/rand/v2 Source: one 32-bit draw in the high
// half, so that rand.Int64N(n) returns floor(u·n) for the draw u in [0, 1),
// the same value as the article's u·n. schedule.Policy driven by it draws
// the article's full-jitter delays.
func (s *stream) Uint64() uint64 {
	return uint64(s.next32()) << 32
}

// keyed returns a number in [0, 1) fixed by the seed and the parts alone,
// not by when it is asked for: a fault is drawn per (event, attempt,
// purpose), so every handler sees the same faults whatever order its
// deliveries complete in. Parts are joined with "|" and hashed byte by
// byte, then fed to the generator as its seed.
func keyed(seed uint32, parts ...string) float64 {
	h := seed
	for _, b := range []byte(strings.Join(parts, "|")) {
		h = (h ^ uint32(b)) * 2654435761
	}
	s := stream(h)
	return s.next()
}

// streamFor is a generator seeded from parts the way keyed is, for a
// sequence of draws that belongs to one event.
func streamFor(seed uint32, parts ...string) *stream {
	s := stream(uint32(keyed(seed, parts...) * (1 << 32)))
	return &s
}

// itoa spells an attempt or event number in a keyed part.
func itoa(n int) string { return strconv.Itoa(n) }
