package esm

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

func TestConfigDefaultsAndLimits(t *testing.T) {
	inv := lambda.NewHandler(func() error { return nil })
	m, err := New(newFakeStream(), inv, Config{StreamARN: fakeARN})
	if err != nil {
		t.Fatal(err)
	}
	c := m.cfg
	if c.BatchSize != 100 || c.ParallelizationFactor != 1 || c.StartingPosition != TrimHorizon || c.PollInterval != 200*time.Millisecond ||
		c.maxRetries() != -1 || c.Region != "us-east-1" || !strings.Contains(c.FunctionARN, ":function:") {
		t.Errorf("defaults %+v", c)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{StreamARN: "arn:aws:dynamodb:us-east-1:1:table/t"}, "not a DynamoDB stream ARN"},
		{Config{StreamARN: fakeARN, BatchSize: 10001}, "BatchSize 10001"},
		{Config{StreamARN: fakeARN, StartingPosition: "AT_TIMESTAMP"}, "StartingPosition"},
		{Config{StreamARN: fakeARN, MaximumRetryAttempts: Int(-2)}, "MaximumRetryAttempts -2"},
		{Config{StreamARN: fakeARN, MaximumRetryAttempts: Int(10001)}, "MaximumRetryAttempts 10001"},
		{Config{StreamARN: fakeARN, FilterCriteria: []string{"{"}}, "filter pattern 0"},
		{Config{StreamARN: fakeARN, MaximumBatchingWindow: -time.Second}, "MaximumBatchingWindow"},
		{Config{StreamARN: fakeARN, ParallelizationFactor: 11}, "ParallelizationFactor 11: want 1..10"},
		{Config{StreamARN: fakeARN, ParallelizationFactor: -1}, "ParallelizationFactor -1"},
	} {
		if _, err := New(newFakeStream(), inv, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// The response rules Lambda applies with ReportBatchItemFailures.
func TestJudgeResponse(t *testing.T) {
	recs := []pending{{seq: "100"}, {seq: "200"}, {seq: "300"}}
	m := &Mapping{cfg: Config{ReportBatchItemFailures: true}}
	for _, tc := range []struct {
		resp     string
		ok       bool
		failedAt int
	}{
		{``, true, 0},
		{`null`, true, 0},
		{`{}`, true, 0},
		{`{"batchItemFailures":null}`, true, 0},
		{`{"batchItemFailures":[]}`, true, 0},
		{`"done"`, true, 0},
		{`{"batchItemFailures":[{"itemIdentifier":"300"},{"itemIdentifier":"200"}]}`, false, 1},
		{`{"batchItemFailures":[{"itemIdentifier":"100"}]}`, false, 0},
		{`{"batchItemFailures":[{"itemIdentifier":"400"}]}`, false, -1},
		{`{"batchItemFailures":[{"itemIdentifier":""}]}`, false, -1},
		{`{"batchItemFailures":[{"itemIdentifier":null}]}`, false, -1},
		{`{"batchItemFailures":[{"id":"200"}]}`, false, -1},
		{`{"batchItemFailures":"x"}`, false, -1},
		{`{not json`, false, -1},
	} {
		v := m.judge(recs, []byte(tc.resp), nil)
		if v.ok != tc.ok || (!v.ok && v.failedAt != tc.failedAt) {
			t.Errorf("%s: ok=%v failedAt=%d, want ok=%v failedAt=%d", tc.resp, v.ok, v.failedAt, tc.ok, tc.failedAt)
		}
	}
	if v := (&Mapping{}).judge(recs, []byte(`{"batchItemFailures":[{"itemIdentifier":"200"}]}`), nil); !v.ok {
		t.Error("without ReportBatchItemFailures the response must be ignored")
	}
}
