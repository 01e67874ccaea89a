package portal

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/go-chi/chi/v5"

	"github.com/heraldhq/herald/web"
)

// assets serves the embedded static files. Pages link them with a content
// hash in the query (?v=…), so browsers may cache them for a year and still
// fetch a new version the moment it ships.
type assets struct {
	files    map[string][]byte
	versions map[string]string
}

func loadAssets() (*assets, error) {
	static := web.Static()
	names, err := fs.Glob(static, "*")
	if err != nil {
		return nil, err
	}
	a := &assets{files: map[string][]byte{}, versions: map[string]string{}}
	for _, name := range names {
		b, err := fs.ReadFile(static, name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		a.files[name] = b
		a.versions[name] = hex.EncodeToString(sum[:6])
	}
	return a, nil
}

// url is the address of a static file, versioned by its content.
func (a *assets) url(name string) string {
	return Path + "/static/" + name + "?v=" + a.versions[name]
}

func (a *assets) serve(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	b, ok := a.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	if r.URL.Query().Get("v") == a.versions[name] {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	_, _ = w.Write(b)
}
