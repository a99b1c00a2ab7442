//go:build denorm_functiondeps

package denormcdk

// The construct builds FunctionPackage in the app's module at synth (buildFunction), which
// needs go.mod and go.sum to cover the function's imports. This file is never compiled (no
// build sets its tag), but `go mod tidy` reads files of every build tag, also in dependencies:
// listing the function's imports here makes an app's `go mod tidy` record what building it
// needs, and nothing more has to be asked of the app. TestFunctionDepsCoverTheFunction keeps
// the list equal to functions/streamproc's imports.

import (
	_ "github.com/aws/aws-lambda-go/lambda"
	_ "github.com/aws/aws-lambda-go/lambdacontext"

	_ "github.com/denorm/denorm/internal/apply"
	_ "github.com/denorm/denorm/internal/awsconf"
	_ "github.com/denorm/denorm/internal/handler"
	_ "github.com/denorm/denorm/internal/processor"
	_ "github.com/denorm/denorm/internal/rules"
)
