package receiver_test

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// serverTimeouts are the http.Server fields a consumer's server sets. The
// zero value of each means no limit: without ReadTimeout a sender that
// trickles its body holds a connection, a goroutine and up to the body
// limit in memory for as long as it likes.
var serverTimeouts = []string{"ReadHeaderTimeout", "ReadTimeout", "WriteTimeout", "IdleTimeout"}

// Every consumer example a reader may copy serves HTTP through an
// http.Server that sets all four timeouts, never through
// http.ListenAndServe, which sets none.
func TestConsumerExamplesSetServerTimeouts(t *testing.T) {
	t.Parallel()
	for _, src := range []struct {
		name   string
		blocks []string
	}{
		{"README.md", markdownGoBlocks(t, "../README.md")},
		{"receiver/doc.go", docCodeBlocks(t, "doc.go")},
		{"receiver/example_test.go", []string{readFile(t, "example_test.go")}},
		{"receiver/example/main.go", []string{readFile(t, "example/main.go")}},
	} {
		t.Run(src.name, func(t *testing.T) {
			t.Parallel()
			var servers int
			for _, block := range src.blocks {
				file := parseSnippet(t, block)
				ast.Inspect(file, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.CallExpr:
						if name, ok := httpName(n.Fun); ok && slices.Contains([]string{"ListenAndServe", "ListenAndServeTLS", "Serve", "ServeTLS"}, name) {
							t.Errorf("%s calls http.%s, which serves without timeouts; use an http.Server with %s", src.name, name, strings.Join(serverTimeouts, ", "))
						}
					case *ast.CompositeLit:
						if name, ok := httpName(n.Type); ok && name == "Server" {
							servers++
							var set []string
							for _, elt := range n.Elts {
								if kv, ok := elt.(*ast.KeyValueExpr); ok {
									set = append(set, kv.Key.(*ast.Ident).Name)
								}
							}
							for _, field := range serverTimeouts {
								if !slices.Contains(set, field) {
									t.Errorf("%s: an http.Server without %s (it sets %v)", src.name, field, set)
								}
							}
						}
					}
					return true
				})
			}
			require.NotZero(t, servers, "%s shows a consumer's server as an http.Server with its timeouts", src.name)
		})
	}
}

// httpName returns Name for the expression http.Name.
func httpName(e ast.Expr) (string, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return sel.Sel.Name, ok && pkg.Name == "http"
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

var goFence = regexp.MustCompile("(?s)```go\n(.*?)```")

func markdownGoBlocks(t *testing.T, path string) []string {
	t.Helper()
	var blocks []string
	for _, m := range goFence.FindAllStringSubmatch(readFile(t, path), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// docCodeBlocks returns the code blocks of a file's package comment.
func docCodeBlocks(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	var p comment.Parser
	var blocks []string
	for _, b := range p.Parse(f.Doc.Text()).Content {
		if code, ok := b.(*comment.Code); ok {
			blocks = append(blocks, code.Text)
		}
	}
	return blocks
}

// parseSnippet parses a whole file, or else statements as a function body.
func parseSnippet(t *testing.T, code string) *ast.File {
	t.Helper()
	if f, err := parser.ParseFile(token.NewFileSet(), "", code, 0); err == nil {
		return f
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", "package snippet\nfunc _() {\n"+code+"\n}", 0)
	require.NoError(t, err, "a code example that is neither a file nor statements:\n%s", code)
	return f
}
