package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// The example header of the spec: one v1 and one v1a entry.
	specExampleHeader = "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg=="
)

func TestParseSignatureHeader(t *testing.T) {
	t.Parallel()

	hmac32 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, sha256.Size))
	ed64 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, ed25519.SignatureSize))

	tests := []struct {
		name string
		in   string
		want []Algorithm
	}{
		{"one v1", specSignature, []Algorithm{HMACSHA256}},
		{"spec example with v1 and v1a", specExampleHeader, []Algorithm{HMACSHA256, Ed25519}},
		{"several spaces and tabs", "  v1," + hmac32 + " \t v1a," + ed64 + "\t", []Algorithm{HMACSHA256, Ed25519}},
		{"unknown versions are skipped", "v2,anything v1," + hmac32 + " v1b,not-base64-at-all", []Algorithm{HMACSHA256}},
		{"only unknown versions", "v2,abc", []Algorithm{}},
		{"exactly MaxSignatures", strings.Repeat("v1,"+hmac32+" ", MaxSignatures), repeatAlg(HMACSHA256, MaxSignatures)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sigs, err := ParseSignatureHeader(tt.in)
			require.NoError(t, err)
			got := make([]Algorithm, 0, len(sigs))
			for _, s := range sigs {
				got = append(got, s.Algorithm)
			}
			require.Equal(t, tt.want, got)
		})
	}

	sigs, err := ParseSignatureHeader(specExampleHeader)
	require.NoError(t, err)
	require.Equal(t, specExampleHeader, sigs[0].String()+" "+sigs[1].String(), "String writes entries back as sent")
}

func repeatAlg(a Algorithm, n int) []Algorithm {
	out := make([]Algorithm, n)
	for i := range out {
		out[i] = a
	}
	return out
}

func TestParseSignatureHeaderErrors(t *testing.T) {
	t.Parallel()

	hmac32 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, sha256.Size))

	tests := []struct {
		name    string
		in      string
		wantMsg string
	}{
		{"empty", "", "no signatures"},
		{"blank", " \t ", "no signatures"},
		{"no comma", "v1" + hmac32, "entry 1 is not of the form version,base64"},
		{"empty version", "," + hmac32, "entry 1 is not of the form"},
		{"empty value", "v1, v1," + hmac32, "entry 1 is not of the form"},
		{"second entry broken", specSignature + " garbage", "entry 2 is not of the form"},
		{"v1 not base64", "v1,****", "entry 1 (v1) is not standard padded base64"},
		{"v1 unpadded", "v1," + strings.TrimRight(hmac32, "="), "not standard padded base64"},
		{"v1 non-canonical padding bits", "v1," + hmac32[:42] + "B=", "not standard padded base64"},
		{"v1 wrong length", "v1,AAAA", "entry 1 (v1) is 3 bytes, want 32"},
		{"v1a wrong length", "v1a," + hmac32, "entry 1 (v1a) is 32 bytes, want 64"},
		{"comma separated instead of spaces", specSignature + "," + specSignature, "not standard padded base64"},
		{"too many", strings.Repeat(specSignature+" ", MaxSignatures+1), "33 signatures, at most 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sigs, err := ParseSignatureHeader(tt.in)
			require.ErrorIs(t, err, ErrInvalidSignatureHeader)
			require.ErrorContains(t, err, tt.wantMsg)
			require.Nil(t, sigs)
		})
	}
}

// FuzzParseSignatureHeader checks that the parser never panics, that what it
// accepts is well formed, and that writing the entries back and parsing
// again gives the same signatures.
func FuzzParseSignatureHeader(f *testing.F) {
	for _, seed := range []string{
		"",
		" ",
		specSignature,
		specExampleHeader,
		specSignature + "  \t" + specSignature,
		"v1,",
		",abc",
		"v1,AAAA",
		"v2,whatever v1a,????",
		"v1a," + strings.Repeat("A", 86) + "==",
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE",
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVl\nNIOLJ1OE=",
		strings.Repeat("v1,x ", MaxSignatures+1),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sigs, err := ParseSignatureHeader(header)
		if err != nil {
			if !errors.Is(err, ErrInvalidSignatureHeader) {
				t.Fatalf("ParseSignatureHeader(%q) error %v does not wrap ErrInvalidSignatureHeader", header, err)
			}
			if sigs != nil {
				t.Fatalf("ParseSignatureHeader(%q) returned signatures with an error", header)
			}
			return
		}
		if len(sigs) > MaxSignatures {
			t.Fatalf("ParseSignatureHeader(%q) returned %d signatures, more than %d", header, len(sigs), MaxSignatures)
		}
		entries := make([]string, len(sigs))
		for i, s := range sigs {
			switch {
			case s.Algorithm == HMACSHA256 && len(s.Value) == sha256.Size:
			case s.Algorithm == Ed25519 && len(s.Value) == ed25519.SignatureSize:
			default:
				t.Fatalf("ParseSignatureHeader(%q) entry %d: %s with %d bytes", header, i, s.Algorithm, len(s.Value))
			}
			entries[i] = s.String()
		}
		if len(sigs) == 0 {
			return
		}
		again, err := ParseSignatureHeader(strings.Join(entries, " "))
		if err != nil {
			t.Fatalf("re-parsing the written entries of %q: %v", header, err)
		}
		if len(again) != len(sigs) {
			t.Fatalf("round trip of %q: %d signatures, then %d", header, len(sigs), len(again))
		}
		for i := range sigs {
			if again[i].Algorithm != sigs[i].Algorithm || !bytes.Equal(again[i].Value, sigs[i].Value) {
				t.Fatalf("round trip of %q changed entry %d", header, i)
			}
		}
	})
}
