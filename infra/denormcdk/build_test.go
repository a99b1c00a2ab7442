package denormcdk

import (
	"go/parser"
	"go/token"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
)

// TestFunctionDepsCoverTheFunction: functiondeps.go must list the function's imports, or an
// app's `go mod tidy` leaves out a module the build at synth needs.
func TestFunctionDepsCoverTheFunction(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, FunctionPackage).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", FunctionPackage, err)
	}
	var want []string
	for _, imp := range strings.Fields(string(out)) {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") { // not the standard library
			want = append(want, imp)
		}
	}
	f, err := parser.ParseFile(token.NewFileSet(), "functiondeps.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		got = append(got, p)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("functiondeps.go imports\n  %s\nthe function imports\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestGoArch(t *testing.T) {
	for arch, want := range map[awslambda.Architecture]string{
		awslambda.Architecture_ARM_64(): "arm64",
		awslambda.Architecture_X86_64(): "amd64",
	} {
		if got, err := goArch(arch); got != want || err != nil {
			t.Errorf("goArch(%s) = %q, %v; want %q", *arch.Name(), got, err, want)
		}
	}
}

// TestBuildWithoutGo: without the go command the construct says what else it can take.
func TestBuildWithoutGo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := buildFunction(t.TempDir(), "arm64")
	if err == nil || !strings.Contains(err.Error(), "give Props.Code a built bootstrap") {
		t.Fatalf("error %v, want one naming Props.Code", err)
	}
}
