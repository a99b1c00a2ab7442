package denormcdk

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
)

// FunctionPackage is the stream processor's Go package, which the construct builds when
// Props.Code is empty.
const FunctionPackage = "github.com/denorm/denorm/functions/streamproc"

// buildFlags are `make build`'s: no RPC server (provided.al2023 speaks the Runtime API), no
// local paths, no symbol table. -buildvcs=false keeps the app's own repository state out of
// the binary, so that a commit of the app does not change the asset and redeploy the function.
var buildFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-buildvcs=false", "-ldflags=-s -w"}

// goArch is the GOARCH of a Lambda architecture.
func goArch(arch awslambda.Architecture) (string, error) {
	switch name := *arch.Name(); name {
	case *awslambda.Architecture_ARM_64().Name():
		return "arm64", nil
	case *awslambda.Architecture_X86_64().Name():
		return "amd64", nil
	default:
		return "", fmt.Errorf("architecture %s: want arm64 or x86_64", name)
	}
}

// builds holds the binaries this process built, by output directory and GOARCH: several
// constructs in one app share one build.
var builds struct {
	sync.Mutex
	done map[[2]string]string
}

// buildFunction builds FunctionPackage for Lambda (linux, goarch) with the go command, in
// the working directory of the CDK app (where `cdk synth` runs it: its module, with its
// go.mod). The version built is the one the app's go.mod selects, the same whose rules
// compiler validated the rules file at synth. The go command's build cache makes a second
// synth cost a link at most. It returns the path of the executable, under outdir.
func buildFunction(outdir, goarch string) (string, error) {
	builds.Lock()
	defer builds.Unlock()
	key := [2]string{outdir, goarch}
	if path, ok := builds.done[key]; ok {
		return path, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("building the function: the go command is not on PATH; install Go, or give Props.Code a built bootstrap")
	}
	path := filepath.Join(outdir, "denorm-build-linux-"+goarch, "bootstrap")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("building the function: %w", err)
	}
	args := append([]string{"build"}, buildFlags...)
	cmd := exec.Command(goTool, append(args, "-o", path, FunctionPackage)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s for linux/%s in the app's module: %w\n%s"+
			"(a missing go.sum entry: run `go mod tidy` in the app, which records what the function needs)",
			FunctionPackage, goarch, err, out.Bytes())
	}
	if builds.done == nil {
		builds.done = map[[2]string]string{}
	}
	builds.done[key] = path
	return path, nil
}
