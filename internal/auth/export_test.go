package auth

// Tracked is how many addresses t holds.
func (t *FailureThrottle) Tracked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.buckets)
}
