package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument describes every route of the API. A test checks it
// against the routes the router registers, both ways.
//
//go:embed openapi.json
var openAPIDocument []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDocument)
}
