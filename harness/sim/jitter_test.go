package sim

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The article's two strategies, run through schedule.Policy with the
// article's generator, give the article's numbers.
func TestJitterReproducesArticle(t *testing.T) {
	t.Parallel()

	rows := Jitter(Article())
	require.Len(t, rows, 3)
	require.Equal(t, JitterRow{Name: "exponential, no jitter", Attempts: 10000, PeakAfterRecovery: 1000, LastDelivered: 511 * time.Second},
		withoutHistogram(rows[0]))
	require.Equal(t, 10790, rows[1].Attempts)
	require.Equal(t, 11, rows[1].PeakAfterRecovery)
	require.Equal(t, 1781*time.Second, rows[1].LastDelivered.Round(time.Second))
}

// Herald's default policy spreads the retries of deliveries that failed
// together: the busiest second after recovery sees a small share of them.
func TestHeraldJitterSpreadsRecoveryPeak(t *testing.T) {
	t.Parallel()

	cfg := Small()
	rows := Jitter(cfg)
	noJitter, herald := rows[0], rows[2]
	require.Equal(t, "Herald schedule.Default()", herald.Name)
	require.Equal(t, cfg.JitterDeliveries, noJitter.PeakAfterRecovery, "without jitter every delivery retries in the same second")
	require.Less(t, herald.PeakAfterRecovery, cfg.JitterDeliveries/10)
	for _, r := range rows {
		sum := 0
		for _, n := range r.PerSecond {
			sum += n
		}
		require.Equal(t, r.Attempts, sum, "%s: the histogram holds every attempt", r.Name)
		require.GreaterOrEqual(t, r.LastDelivered, recovery, r.Name)
	}
}

func TestWriteJitterSVG(t *testing.T) {
	t.Parallel()

	var buf bytes.Buffer
	require.NoError(t, WriteJitterSVG(&buf, Jitter(Small())))
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	paths := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the SVG is well-formed XML")
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "path" {
			paths++
		}
	}
	require.Equal(t, 3, paths, "one histogram per strategy")
	require.True(t, strings.Contains(buf.String(), "receiver back"))
}

func withoutHistogram(r JitterRow) JitterRow {
	r.PerSecond = nil
	r.Deliveries = 0
	return r
}
