package receiver

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestDecodePayload(t *testing.T) {
	t.Parallel()

	t.Run("Herald", func(t *testing.T) {
		t.Parallel()
		var ev Event
		body := []byte(`{"type":"invoice.paid","timestamp":"2026-12-02T12:00:00.5Z","object":{"id":"inv_123","version":7},"data":{"amount":4200}}`)
		require.NoError(t, decodePayload(body, &ev))
		require.Equal(t, "invoice.paid", ev.Type)
		require.Equal(t, "2026-12-02T12:00:00.5Z", ev.Timestamp.Format("2006-01-02T15:04:05.999Z07:00"))
		require.Equal(t, "inv_123", ev.ObjectID)
		require.EqualValues(t, 7, ev.Version)
		require.JSONEq(t, `{"amount":4200}`, string(ev.Data))
		require.Equal(t, body, ev.Payload)
	})

	t.Run("StandardWebhooksWithoutObject", func(t *testing.T) {
		t.Parallel()
		var ev Event
		require.NoError(t, decodePayload([]byte(`{"type":"user.created","timestamp":"2026-12-02T12:00:00Z","data":{}}`), &ev))
		require.Empty(t, ev.ObjectID)
		require.Zero(t, ev.Version)
	})

	t.Run("ObjectWithoutVersion", func(t *testing.T) {
		t.Parallel()
		var ev Event
		require.NoError(t, decodePayload([]byte(`{"type":"a","object":{"id":"o","version":null}}`), &ev))
		require.Equal(t, "o", ev.ObjectID)
		require.Zero(t, ev.Version)
	})

	t.Run("Malformed", func(t *testing.T) {
		t.Parallel()
		for _, body := range []string{
			``, `null`, `"x"`, `{"type":1}`, `{"type":"a"} trailing`,
			`{"type":"a","object":{"id":7}}`, `{"type":"a","object":{"id":"o","version":0}}`,
			`{"type":"a","object":{"id":"o","version":99999999999999999999}}`,
		} {
			var ev Event
			err := decodePayload([]byte(body), &ev)
			require.ErrorIs(t, err, errMalformedPayload, "%q", body)
		}
	})
}

// FuzzDecodePayload checks that any body either decodes into an event the
// inbox can store or fails with errMalformedPayload, never panicking.
func FuzzDecodePayload(f *testing.F) {
	for _, seed := range []string{
		`{"type":"invoice.paid","timestamp":"2026-12-02T12:00:00Z","object":{"id":"inv_1","version":7},"data":{}}`,
		`{"type":"user.created","data":null}`,
		`{"type":"a","object":{"id":"o"}}`,
		`{"type":"a\u0000"}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var ev Event
		err := decodePayload(body, &ev)
		if err != nil {
			if !errors.Is(err, errMalformedPayload) {
				t.Fatalf("error %v does not wrap errMalformedPayload", err)
			}
			return
		}
		for name, s := range map[string]string{"type": ev.Type, "object id": ev.ObjectID} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Fatalf("%s %q cannot be stored in a text column", name, s)
			}
		}
		if ev.Type == "" || ev.Version < 0 || (ev.Version > 0 && ev.ObjectID == "") || !bytes.Equal(ev.Payload, body) {
			t.Fatalf("decoded %+v from %q", ev, body)
		}
	})
}
