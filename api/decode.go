package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// DefaultMaxBodyBytes caps request bodies: 1 MiB, room for the largest
// payload the outbox accepts by default (256 KiB) with its envelope.
const DefaultMaxBodyBytes = 1 << 20

// decode reads one JSON object from the request body into dst. It rejects
// other content types, bodies over the server's limit, unknown fields,
// wrong types and trailing data, each with a problem naming the fault.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, dst any) error {
	return s.decodeLimited(w, r, dst, s.maxBodyBytes)
}

// decodeLimited is decode with a body limit of its own.
func (s *Server) decodeLimited(w http.ResponseWriter, r *http.Request, dst any, limit int64) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return problem(http.StatusUnsupportedMediaType, "unsupported-media-type",
				fmt.Sprintf("the body must be JSON; send Content-Type: application/json (got %q)", ct))
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeProblem(err, limit)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return decodeProblem(err, limit)
		}
		return badRequest("the body must hold exactly one JSON object; remove what follows it")
	}
	return nil
}

// decodeOptional is decode for routes whose body may be left out: an empty
// body leaves dst as it is.
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, dst any) error {
	body := bufio.NewReader(r.Body)
	if _, err := body.Peek(1); errors.Is(err, io.EOF) {
		return nil
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{body, r.Body}
	return s.decode(w, r, dst)
}

func decodeProblem(err error, limit int64) *Problem {
	var (
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
		tooLarge *http.MaxBytesError
	)
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("the body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("the body ends in the middle of a JSON value; send a complete JSON object")
	case errors.As(err, &tooLarge):
		return problem(http.StatusRequestEntityTooLarge, "too-large",
			fmt.Sprintf("the body is larger than the %d-byte limit; send less data", limit))
	case errors.As(err, &syntax):
		return badRequest(fmt.Sprintf("the body is not valid JSON at byte %d: %s", syntax.Offset, syntax.Error()))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest(fmt.Sprintf("the body must be a JSON object, not a JSON %s", typ.Value))
		}
		p := invalid(typ.Field, fmt.Sprintf("%s must be %s, not a JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value))
		p.Status, p.Title, p.Type = http.StatusBadRequest, http.StatusText(http.StatusBadRequest), "urn:herald:problem:invalid-field"
		return p
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		p := invalid(name, fmt.Sprintf("unknown field %q; check its spelling against the API reference at /openapi.json", name))
		p.Status, p.Title, p.Type = http.StatusBadRequest, http.StatusText(http.StatusBadRequest), "urn:herald:problem:unknown-field"
		return p
	}
	return badRequest("the body could not be read as JSON: " + err.Error())
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		return "a whole number"
	case "float32", "float64":
		return "a number"
	}
	return "a different type"
}

// checkText rejects strings Postgres cannot store (NUL bytes, invalid
// UTF-8) and strings longer than max runes.
func checkText(field, value string, max int) *Problem {
	if !utf8.ValidString(value) || strings.IndexByte(value, 0) >= 0 {
		return invalid(field, field+" must be UTF-8 text without NUL characters")
	}
	if n := utf8.RuneCountInString(value); n > max {
		return invalid(field, fmt.Sprintf("%s is %d characters long; the most is %d", field, n, max))
	}
	return nil
}
