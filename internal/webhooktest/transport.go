package webhooktest

import (
	"net/http"
	"net/netip"

	"github.com/heraldhq/herald/internal/ssrf"
)

// Transport returns the SSRF guard's transport, the one Herald delivers
// with, allowing loopback so that deliveries reach a Receiver. A delivery
// worker's default transport allows nothing beyond public addresses, so a
// test that delivers to a Receiver passes this one.
func Transport() *http.Transport {
	return ssrf.New(netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")).Transport()
}
