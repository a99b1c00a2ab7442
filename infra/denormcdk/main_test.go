package denormcdk

import (
	"os"
	"testing"

	"github.com/denorm/denorm/infra/jsiiexit"
)

// Importing the CDK bindings starts the jsii runtime at package initialization, even in tests
// that synthesize nothing; end it without jsii.Close (see jsiiexit.End).
func TestMain(m *testing.M) {
	status := m.Run()
	jsiiexit.End()
	os.Exit(status)
}
