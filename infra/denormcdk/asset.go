package denormcdk

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
)

// stageCode builds the function's code directory: bootstrap from codeDir and the rules file
// as rules.yaml next to it. The function and its rules then deploy as one versioned unit, so
// a running function never sees rules it was not built and tested with, and a rules change
// is a code change that CloudFormation rolls out (and back) like any other.
//
// The directory lives in the cloud assembly's output directory (cdk.out), like CDK's own
// bundling output, and is rebuilt on every synth; CDK copies it into an asset named by its
// content hash, so equal inputs give an equal asset and no redeploy.
func stageCode(scope constructs.Construct, codeDir, rulesFile string) (string, error) {
	outdir := awscdk.Stage_Of(scope).AssetOutdir()
	if outdir == nil || *outdir == "" {
		return "", fmt.Errorf("staging function code: the construct is not inside an App with an output directory")
	}
	sum := sha256.Sum256([]byte(*scope.Node().Path()))
	dir := filepath.Join(*outdir, "denorm-staging-"+hex.EncodeToString(sum[:8]))
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("staging function code: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("staging function code: %w", err)
	}
	// Lambda needs bootstrap executable; the zip CDK builds keeps this mode.
	if err := copyFile(filepath.Join(codeDir, "bootstrap"), filepath.Join(dir, "bootstrap"), 0o755); err != nil {
		return "", fmt.Errorf("staging function code: %w", err)
	}
	if err := copyFile(rulesFile, filepath.Join(dir, RulesFileName), 0o644); err != nil {
		return "", fmt.Errorf("staging rules file: %w", err)
	}
	return dir, nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
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
