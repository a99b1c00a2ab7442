// Command echofn is a tiny Lambda function for the runtimeapi tests. What it does depends on
// the payload: {"echo": v} returns v; {"error": "msg"} returns an error; {"panic": "msg"}
// panics; {"sleep": "2s"} sleeps, ignoring its deadline, as a hung function does;
// {"exit": n} exits the process; {"context": true} returns what the runtime told it; a
// DynamoDB stream event panics when a record's pk starts with PANIC, and succeeds otherwise.
// Every invocation prints a line, so tests can see the output forwarded.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type request struct {
	Echo    json.RawMessage `json:"echo"`
	Error   string          `json:"error"`
	Panic   string          `json:"panic"`
	Sleep   string          `json:"sleep"`
	Exit    *int            `json:"exit"`
	Context bool            `json:"context"`
	Records []struct {
		DynamoDB struct {
			Keys map[string]map[string]string `json:"Keys"`
		} `json:"dynamodb"`
	} `json:"Records"`
}

// seen is what the function learned from the runtime about its invocation.
type seen struct {
	RequestID    string `json:"requestId"`
	FunctionARN  string `json:"functionArn"`
	DeadlineMs   int64  `json:"deadlineMs"`
	HasDeadline  bool   `json:"hasDeadline"`
	FunctionName string `json:"functionName"`
	MemoryMB     int    `json:"memoryMB"`
	Region       string `json:"region"`
	Pid          int    `json:"pid"`
}

var errRequested = errors.New("requested failure")

func handle(ctx context.Context, req request) (any, error) {
	fmt.Println("echofn: invoked")
	for _, r := range req.Records {
		if pk := r.DynamoDB.Keys["pk"]["S"]; strings.HasPrefix(pk, "PANIC") {
			panic("poison record " + pk)
		}
	}
	switch {
	case req.Error != "":
		return nil, fmt.Errorf("%w: %s", errRequested, req.Error)
	case req.Panic != "":
		panic(req.Panic)
	case req.Exit != nil:
		os.Exit(*req.Exit)
	case req.Sleep != "":
		d, err := time.ParseDuration(req.Sleep)
		if err != nil {
			return nil, err
		}
		time.Sleep(d)
		return "slept", nil
	case req.Context:
		lc, _ := lambdacontext.FromContext(ctx)
		dl, ok := ctx.Deadline()
		s := seen{
			HasDeadline: ok, DeadlineMs: dl.UnixMilli(), FunctionName: lambdacontext.FunctionName,
			MemoryMB: lambdacontext.MemoryLimitInMB, Region: os.Getenv("AWS_REGION"), Pid: os.Getpid(),
		}
		if lc != nil {
			s.RequestID, s.FunctionARN = lc.AwsRequestID, lc.InvokedFunctionArn
		}
		return s, nil
	}
	return req.Echo, nil
}

func main() {
	if os.Getenv("ECHOFN_FAIL_INIT") != "" {
		fmt.Fprintln(os.Stderr, "echofn: init failed")
		os.Exit(3)
	}
	lambda.Start(handle)
}
