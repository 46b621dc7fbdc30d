// Package gosrc type-checks a package of the module from its source, for tests that hold its
// declarations against something else: the kernel's headers, a table of names. Like testutil, it
// is for _test.go files only; it lives apart so that the other tests do not link go/types.
package gosrc

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Check type-checks the Go files of dir but its _test.go files as the package path, and
// returns the package.
func Check(t testing.TB, dir, path string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	require.NotEmpty(t, files, "no Go files in %s", dir)
	pkg, err := (&types.Config{Importer: importer.Default()}).Check(path, fset, files, nil)
	require.NoError(t, err)
	return pkg
}
