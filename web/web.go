// Package web holds the customer portal's HTML templates and static assets,
// embedded in the binary so that cmd/api ships as one file and the portal
// needs no JavaScript build step.
//
// templates/ holds html/template files: layout.html and partials.html are
// shared by every page, and each other file defines one page's "content"
// block. static/ holds the stylesheet, the one script (progressive
// enhancement only: the pages work without it) and the icon.
package web

import (
	"embed"
	"io/fs"
)

//go:embed templates/*.html
var templates embed.FS

//go:embed static/*
var static embed.FS

// Templates returns the template files, named like "endpoints.html".
func Templates() fs.FS {
	sub, err := fs.Sub(templates, "templates")
	if err != nil {
		// fs.Sub fails only on an invalid path, and this one is a constant.
		panic(err)
	}
	return sub
}

// Static returns the static assets, named like "portal.css".
func Static() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	return sub
}
