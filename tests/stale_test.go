package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/denorm/denorm/internal/ddbtest"
	"github.com/denorm/denorm/internal/esm"
	"github.com/denorm/denorm/internal/local"
)

// What applications do to a target they read and write back: save it as they read it
// after Denorm wrote it, delete it and put back the copy they kept, and all that while the
// stream is read again from its start. Each test ends with the device showing what its
// readings say, and `denorm verify` finding no drift.

const deviceRules = "testdata/devices.yaml"

func deviceKey(d string) item { return item{"pk": str("DEVICE#" + d), "sk": str("METADATA")} }

func deviceItem(d, name string) item {
	return item{"pk": str("DEVICE#" + d), "sk": str("METADATA"), "name": str(name)}
}

func readingItem(d string, i, temp int) item {
	return item{"pk": str("DEVICE#" + d), "sk": str(fmt.Sprintf("READING#%05d", i)),
		"temp": num(temp), "at": str(fmt.Sprintf("2026-11-26T10:%02d:%02dZ", i/60%60, i%60))}
}

// checkDevice compares the device's derived attributes with what its readings give.
func (r *appRig) checkDevice(d string, count, maxTemp, lastTemp int, hottest ...int) {
	r.t.Helper()
	it := r.get(deviceKey(d))
	if it == nil {
		r.t.Fatalf("device %s is missing", d)
	}
	for attr, want := range map[string]int{"readingCount": count, "maxTemp": maxTemp, "lastTemp": lastTemp} {
		got, _ := it[attr].(*types.AttributeValueMemberN)
		if got == nil || got.Value != fmt.Sprint(want) {
			r.t.Errorf("device %s: %s is %v, want %d", d, attr, it[attr], want)
		}
	}
	list, _ := it["hottest"].(*types.AttributeValueMemberL)
	if list == nil || len(list.Value) != len(hottest) {
		r.t.Fatalf("device %s: hottest is %v, want %d entries", d, it["hottest"], len(hottest))
	}
	for i, want := range hottest {
		e, _ := list.Value[i].(*types.AttributeValueMemberM)
		if got, _ := e.Value["temp"].(*types.AttributeValueMemberN); got == nil || got.Value != fmt.Sprint(want) {
			r.t.Errorf("device %s: hottest[%d] is %v, want temp %d", d, i, list.Value[i], want)
		}
	}
}

// The application reads the device, a newer and hotter reading arrives and is applied, and
// the application saves the device as it read it (a form, or with one field changed).
func TestAppSavesBackAStaleTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(item) item
	}{
		{"saved as read", func(it item) item { return it }},
		{"saved with a new name", func(it item) item { it["name"] = str("renamed"); return it }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startApp(t, deviceRules)
			r.run(script{r.put("device", deviceItem("d1", "boiler")), r.put("reading 1", readingItem("d1", 1, 25))})
			r.drain()
			read := r.get(deviceKey("d1"))
			r.run(script{r.put("reading 2", readingItem("d1", 2, 30))})
			r.drain()
			r.checkDevice("d1", 2, 30, 30, 30, 25)
			r.run(script{r.put("device saved back", tc.edit(read))})
			r.drain()
			r.checkDevice("d1", 2, 30, 30, 30, 25)
			r.checkNoFailures()
			r.verify()
		})
	}
}

// The application deletes the device and puts back the copy it read before, at once or
// seconds later (an undelete), with readings written between the read and the delete.
func TestTargetDeletedAndPutBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
	}{{"at once", 0}, {"1.5 s later", 1500 * time.Millisecond}, {"5 s later", 5 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startApp(t, deviceRules)
			r.run(script{r.put("device", deviceItem("d1", "boiler")), r.put("reading 1", readingItem("d1", 1, 25)), r.put("reading 2", readingItem("d1", 2, 21))})
			r.drain()
			read := r.get(deviceKey("d1"))
			r.run(script{r.put("reading 3", readingItem("d1", 3, 27)), r.del("device deleted", deviceKey("d1")), pause(tc.after),
				r.put("device put back", read)})
			r.drain()
			r.checkDevice("d1", 3, 27, 27, 27, 25)
			r.checkNoFailures()
			r.verify()
		})
	}
}

// The stream is read again from its start (a mapping re-created at TRIM_HORIZON, as the
// construct's is) while the application puts the device back twice from copies it read.
func TestStreamReplayedWhileTheApplicationRewritesTargets(t *testing.T) {
	r := startApp(t, deviceRules)
	const n = 300
	var first, second item
	s := script{r.put("device", deviceItem("d1", "boiler"))}
	for i := 1; i <= n; i++ {
		s = append(s, r.put("reading", readingItem("d1", i, 20+i%40)))
	}
	r.run(s)
	r.drain()
	first = r.get(deviceKey("d1"))
	r.checkDevice("d1", n, 59, 20+n%40, 59, 59)

	// A new mapping without a checkpoint reads everything again, and the application
	// writes the device back twice while it does.
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := local.Start(context.Background(), local.Config{
		RulesPath: deviceRules, Endpoint: ddbtest.Endpoint(t), Table: r.table, Logger: quietLogger(),
		Mapping: esm.Config{BatchSize: 50, MaximumRetryAttempts: esm.Int(3), BisectBatchOnFunctionError: true,
			ReportBatchItemFailures: true, OnFailureDir: r.failDir, PollInterval: 20 * time.Millisecond,
			StartingPosition: esm.TrimHorizon},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	r.p = p
	r.run(script{r.put("device put back", first), pause(300 * time.Millisecond), r.put("reading", readingItem("d1", n+1, 10))})
	second = r.get(deviceKey("d1"))
	r.run(script{pause(200 * time.Millisecond), r.put("device put back again", second)})
	r.drain()
	r.checkDevice("d1", n+1, 59, 10, 59, 59)
	r.checkNoFailures()
	r.verify()
}
