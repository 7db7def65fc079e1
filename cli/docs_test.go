package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
)

// TestCLIReferenceIsCurrent: every `locus CMD -h` text quoted in docs/CLI.md is what the
// command prints now, so the reference cannot drift from the flags.
// LOCUS_UPDATE_DOCS=1 go test -run TestCLIReferenceIsCurrent ./cli rewrites the blocks.
func TestCLIReferenceIsCurrent(t *testing.T) {
	path := filepath.Join(repoRoot(), "docs", "CLI.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	// The families this test binary registers (family_test.go's) are not locus's.
	saved := families
	families = map[string]Family{transformer.Family: saved[transformer.Family], dae.Family: saved[dae.Family]}
	defer func() { families = saved }()
	block := regexp.MustCompile("(?s)```\n(Usage: locus ([a-z]+) .*?)```")
	seen := map[string]bool{}
	updated := block.ReplaceAllStringFunc(doc, func(m string) string {
		sub := block.FindStringSubmatch(m)
		name := sub[2]
		seen[name] = true
		code, _, help := runCLI(t, name, "-h")
		if code != 0 {
			t.Errorf("locus %s -h: exit %d", name, code)
			return m
		}
		// The tasks this test binary registers (family_test.go) are not locus's.
		help = strings.NewReplacer("denoise-runmax, ", "", "runmax, ", "").Replace(help)
		if help != sub[1] {
			t.Errorf("docs/CLI.md's `locus %s -h` block differs from what it prints (LOCUS_UPDATE_DOCS=1 rewrites it):\n%s", name, firstDiff(sub[1], help))
		}
		return "```\n" + help + "```"
	})
	for name := range commands {
		if !seen[name] {
			t.Errorf("docs/CLI.md quotes no `locus %s -h`", name)
		}
	}
	if os.Getenv("LOCUS_UPDATE_DOCS") == "1" && updated != doc {
		if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// firstDiff shows the first line where two texts differ.
func firstDiff(doc, now string) string {
	a, b := strings.Split(doc, "\n"), strings.Split(now, "\n")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  docs: %s\n  now:  %s", i+1, x, y)
		}
	}
	return ""
}

// TestDocsNameRealTests: every test, fuzz target or benchmark that README.md and docs/
// name (in backquotes) exists, so that a guarantee cannot point at a test that is gone.
func TestDocsNameRealTests(t *testing.T) {
	repo := repoRoot()
	funcs := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark|Example)\w*)\(`)
	err := filepath.WalkDir(repo, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != repo {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
				funcs[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	docs = append(docs, filepath.Join(repo, "README.md")) // bench/PROFILE.md is a log: it names tried and dropped code too
	named := regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Z]\\w*)")
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(b), -1) {
			if !funcs[m[1]] {
				t.Errorf("%s names %s, which no test file declares", filepath.Base(doc), m[1])
			}
		}
	}
}
