package denormcdk

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
)

// checkCode reports why code (Props.Code) holds no bootstrap: it must be empty (the construct
// builds the function) or a directory holding the executable or a zip file with it at its root.
func checkCode(code string) error {
	if code == "" {
		return nil
	}
	const hint = "leave Code empty and the construct builds the function"
	st, err := os.Stat(code)
	switch {
	case err != nil:
		return fmt.Errorf("function code: %w (%s)", err, hint)
	case st.IsDir():
		if st, err := os.Stat(filepath.Join(code, "bootstrap")); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("function code: no bootstrap in %s (%s)", code, hint)
		}
		return nil
	default:
		zr, err := zip.OpenReader(code)
		if err != nil {
			return fmt.Errorf("function code %s: not a directory or a zip file: %w", code, err)
		}
		defer zr.Close()
		if _, err := zipBootstrap(&zr.Reader); err != nil {
			return fmt.Errorf("function code %s: %w", code, err)
		}
		return nil
	}
}

// zipBootstrap finds bootstrap at the root of a zip file.
func zipBootstrap(zr *zip.Reader) (*zip.File, error) {
	for _, f := range zr.File {
		if f.Name == "bootstrap" && f.Mode().IsRegular() {
			return f, nil
		}
	}
	return nil, errors.New("no bootstrap at the root of the zip file")
}

// buildCode builds the function for arch into the app's output directory (buildFunction) and
// returns the directory holding bootstrap, for stageCode.
func buildCode(scope constructs.Construct, arch awslambda.Architecture) (string, error) {
	outdir := awscdk.Stage_Of(scope).AssetOutdir()
	if outdir == nil || *outdir == "" {
		return "", fmt.Errorf("building the function: the construct is not inside an App with an output directory")
	}
	goarch, err := goArch(arch)
	if err != nil {
		return "", err
	}
	bootstrap, err := buildFunction(*outdir, goarch)
	if err != nil {
		return "", err
	}
	return filepath.Dir(bootstrap), nil
}

// stageCode builds the function's own code directory (path is the construct's): the rules
// as rules.yaml and, with withBootstrap, bootstrap from code next to it. A rules change is
// a code change that CloudFormation rolls out (and back) like any other (infra/README.md
// says what happens when the engine changes with it).
//
// The directory lives in the cloud assembly's output directory (cdk.out), like CDK's own
// bundling output, and is rebuilt on every synth; CDK copies it into an asset named by its
// content hash, so equal inputs give an equal asset and no redeploy.
func stageCode(scope constructs.Construct, path, code string, rules []byte, withBootstrap bool) (string, error) {
	sum := sha256.Sum256([]byte(path))
	dir, err := stagingDir(scope, "denorm-staging-"+hex.EncodeToString(sum[:8]))
	if err != nil {
		return "", fmt.Errorf("staging function code: %w", err)
	}
	if withBootstrap {
		// Lambda needs bootstrap executable; the zip CDK builds keeps this mode.
		if err := copyBootstrap(code, filepath.Join(dir, "bootstrap")); err != nil {
			return "", fmt.Errorf("staging function code: %w", err)
		}
	}
	if err := writeFile(bytes.NewReader(rules), RulesFileName, filepath.Join(dir, RulesFileName), 0o644); err != nil {
		return "", fmt.Errorf("staging rules file: %w", err)
	}
	return dir, nil
}

// stageRuntime builds the runtime layer's directory: code itself when it holds bootstrap
// alone, otherwise bootstrap copied from it into a directory named by its content, so every construct of the app built from the same code
// stages (and CDK uploads) it once. It returns the directory and that name.
func stageRuntime(scope constructs.Construct, code string) (dir, digest string, err error) {
	if entries, err := os.ReadDir(code); err == nil && len(entries) == 1 && entries[0].Name() == "bootstrap" && entries[0].Type().IsRegular() {
		// A directory of bootstrap alone (the construct's own build): the layer's asset as it is.
		digest, err := fileDigest(filepath.Join(code, "bootstrap"))
		return code, digest, err
	}
	tmp, err := os.MkdirTemp("", "denorm-runtime-")
	if err != nil {
		return "", "", fmt.Errorf("staging runtime: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := copyBootstrap(code, filepath.Join(tmp, "bootstrap")); err != nil {
		return "", "", fmt.Errorf("staging runtime: %w", err)
	}
	if digest, err = fileDigest(filepath.Join(tmp, "bootstrap")); err != nil {
		return "", "", err
	}
	if dir, err = stagingDir(scope, "denorm-runtime-"+digest); err != nil {
		return "", "", fmt.Errorf("staging runtime: %w", err)
	}
	if err := copyFile(filepath.Join(tmp, "bootstrap"), filepath.Join(dir, "bootstrap"), 0o755); err != nil {
		return "", "", fmt.Errorf("staging runtime: %w", err)
	}
	return dir, digest, nil
}

// fileDigest names a file by the start of its SHA-256.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("staging runtime: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("staging runtime: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// stagingDir is an empty directory of that name in the app's output directory.
func stagingDir(scope constructs.Construct, name string) (string, error) {
	outdir := awscdk.Stage_Of(scope).AssetOutdir()
	if outdir == nil || *outdir == "" {
		return "", fmt.Errorf("the construct is not inside an App with an output directory")
	}
	dir := filepath.Join(*outdir, name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// copyBootstrap copies bootstrap out of code, a directory or a zip file (see checkCode).
func copyBootstrap(code, dst string) error {
	if st, err := os.Stat(code); err == nil && st.IsDir() {
		return copyFile(filepath.Join(code, "bootstrap"), dst, 0o755)
	}
	zr, err := zip.OpenReader(code)
	if err != nil {
		return err
	}
	defer zr.Close()
	f, err := zipBootstrap(&zr.Reader)
	if err != nil {
		return fmt.Errorf("%s: %w", code, err)
	}
	in, err := f.Open()
	if err != nil {
		return fmt.Errorf("%s: %w", code, err)
	}
	defer in.Close()
	return writeFile(in, code, dst, 0o755)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeFile(in, src, dst, mode)
}

// writeFile writes in (read from src) to dst with exactly mode.
func writeFile(in io.Reader, src, dst string, mode os.FileMode) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	// OpenFile's mode is filtered by the umask; the asset hash and Lambda need the exact mode.
	return os.Chmod(dst, mode)
}
