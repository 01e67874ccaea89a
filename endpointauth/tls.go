package endpointauth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// MaxPEMLength bounds each of TLS's PEM fields: 64 KiB, room for a long
// chain or a bundle of dozens of CAs.
const MaxPEMLength = 64 << 10

// TLS is an endpoint's mutual TLS: a client certificate (with its chain)
// and private key, presented when the receiver asks for one, and a CA
// bundle trusted, for this endpoint only, besides the system's roots.
// ClientCertificate and ClientKey go together; CABundle may come alone.
type TLS struct {
	// ClientCertificate is PEM: the leaf first, then any intermediates.
	ClientCertificate string `json:"client_certificate,omitempty"`
	// ClientKey is the leaf's private key, PEM (PKCS #1, PKCS #8 or SEC 1),
	// unencrypted.
	ClientKey string `json:"client_key,omitempty"`
	// CABundle is PEM: one or more CA certificates.
	CABundle string `json:"ca_bundle,omitempty"`
}

// Parsed is TLS checked and ready for a tls.Config.
type Parsed struct {
	// Certificate is the client certificate with its key; nil when TLS
	// has none.
	Certificate *tls.Certificate
	// Subject and NotAfter describe the leaf; empty without a certificate.
	Subject  string
	NotAfter time.Time
	// Roots are the system's roots and CABundle's; nil without a bundle
	// (the system's roots alone).
	Roots *x509.CertPool
}

// Config returns the tls.Config that presents p's certificate and trusts
// p's roots. The minimum version is TLS 1.2.
func (p Parsed) Config() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.Roots}
	if p.Certificate != nil {
		c.Certificates = []tls.Certificate{*p.Certificate}
	}
	return c
}

// Parse checks t and returns it parsed, or a *FieldError naming the field
// at fault ("tls.client_key"). A certificate already expired is refused;
// one that expires later is accepted (the dispatcher warns before it
// does).
func (t TLS) Parse(now time.Time) (Parsed, error) {
	var p Parsed
	for field, v := range map[string]string{"tls.client_certificate": t.ClientCertificate, "tls.client_key": t.ClientKey, "tls.ca_bundle": t.CABundle} {
		if len(v) > MaxPEMLength {
			return Parsed{}, refuse(field, "is %d bytes; at most %d are accepted", len(v), MaxPEMLength)
		}
	}
	switch {
	case t.ClientCertificate == "" && t.ClientKey == "" && t.CABundle == "":
		return Parsed{}, refuse("tls", "is empty; give client_certificate and client_key, a ca_bundle, or both (or null to remove mutual TLS)")
	case t.ClientCertificate != "" && t.ClientKey == "":
		return Parsed{}, refuse("tls.client_key", "is missing; a client certificate needs its private key (PEM)")
	case t.ClientKey != "" && t.ClientCertificate == "":
		return Parsed{}, refuse("tls.client_certificate", "is missing; a private key needs its certificate (PEM)")
	}
	if t.ClientCertificate != "" {
		leaf, err := parseChain("tls.client_certificate", t.ClientCertificate)
		if err != nil {
			return Parsed{}, err
		}
		if !bytes.Contains([]byte(t.ClientKey), []byte("PRIVATE KEY-----")) {
			return Parsed{}, refuse("tls.client_key", "is not a PEM private key; give the key as -----BEGIN PRIVATE KEY----- (or RSA / EC PRIVATE KEY) PEM, unencrypted")
		}
		if bytes.Contains([]byte(t.ClientKey), []byte("ENCRYPTED")) {
			return Parsed{}, refuse("tls.client_key", "is encrypted; give it unencrypted (openssl pkey -in key.pem -out plain.pem), Herald encrypts it at rest")
		}
		cert, err := tls.X509KeyPair([]byte(t.ClientCertificate), []byte(t.ClientKey))
		if err != nil {
			return Parsed{}, refuse("tls.client_key", "does not go with the client certificate (%v); give the private key of the certificate's first block", err)
		}
		if !now.Before(leaf.NotAfter) {
			return Parsed{}, refuse("tls.client_certificate", "expired at %s; give a current certificate", leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		cert.Leaf = leaf
		p.Certificate, p.Subject, p.NotAfter = &cert, leaf.Subject.String(), leaf.NotAfter
	}
	if t.CABundle != "" {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		rest := []byte(t.CABundle)
		n := 0
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				return Parsed{}, refuse("tls.ca_bundle", "holds a %q block; give CA certificates only (-----BEGIN CERTIFICATE-----)", block.Type)
			}
			ca, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return Parsed{}, refuse("tls.ca_bundle", "certificate %d does not parse: %v", n+1, err)
			}
			roots.AddCert(ca)
			n++
		}
		if n == 0 {
			return Parsed{}, refuse("tls.ca_bundle", "holds no PEM certificate; give one or more -----BEGIN CERTIFICATE----- blocks")
		}
		p.Roots = roots
	}
	return p, nil
}

// parseChain returns the first certificate of a PEM chain.
func parseChain(field, chain string) (*x509.Certificate, error) {
	block, _ := pem.Decode([]byte(chain))
	if block == nil {
		return nil, refuse(field, "is not PEM; give the certificate as -----BEGIN CERTIFICATE----- blocks, the client's own first")
	}
	if block.Type != "CERTIFICATE" {
		return nil, refuse(field, "starts with a %q block; give the certificate first (-----BEGIN CERTIFICATE-----)", block.Type)
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, refuse(field, "does not parse as an X.509 certificate: %v", err)
	}
	return leaf, nil
}

// ErrNotParsed is returned for TLS that was stored without being checked;
// it does not happen to values that went through Parse before storing.
var ErrNotParsed = errors.New("mutual TLS settings do not parse")

// Reparse parses t that was checked when stored, wrapping
// ErrNotParsed when it no longer parses (a certificate expired since is
// not an error here: the receiver decides).
func (t TLS) Reparse() (Parsed, error) {
	p, err := t.Parse(time.Time{})
	if err != nil {
		return Parsed{}, fmt.Errorf("%w: %v", ErrNotParsed, err)
	}
	return p, nil
}
