package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEPrograms builds every Go program of the README (its ```go blocks), each as
// a module of a user's that requires Locus and the custom-task example by replace lines,
// so that the README's code cannot drift from the API.
func TestREADMEPrograms(t *testing.T) {
	repo := repoRoot()
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 2 {
		t.Fatalf("the README has %d Go blocks, want the user's binary and the library program", len(blocks))
	}
	sum, err := os.ReadFile(filepath.Join(repo, "examples", "custom_task", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range blocks {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if !strings.HasPrefix(b[1], "package main\n") {
				t.Fatalf("block %d is not a whole program (package main):\n%s", i, b[1])
			}
			dir := t.TempDir()
			gomod := fmt.Sprintf("module readme\n\ngo 1.26\n\nrequire (\n\tgithub.com/locusml/locus v0.0.0\n\texample.com/localmax v0.0.0\n)\n\n"+
				"replace github.com/locusml/locus => %s\n\nreplace example.com/localmax => %s\n", repo, filepath.Join(repo, "examples", "custom_task"))
			for name, text := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(b[1])} {
				if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			goBuild(t, dir, filepath.Join(dir, "prog"))
		})
	}
}
