package denormcdk

import (
	"os"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// Importing the CDK bindings starts the jsii runtime at package initialization, even in tests
// that synthesize nothing; jsii.Close ends it.
func TestMain(m *testing.M) {
	status := m.Run()
	jsii.Close()
	os.Exit(status)
}
