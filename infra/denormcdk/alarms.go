package denormcdk

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Alarms are the four signals that something needs a person: the processor falls behind,
// records were given up on, the handler fails as a whole, or it reads a stream whose
// records it must not apply.
type Alarms struct {
	// IteratorAge: the newest batch's oldest record waited longer than the threshold for
	// five minutes in a row. Copies are stale by that much, and past MaxRecordAge records
	// start going to the failure queue.
	IteratorAge awscloudwatch.Alarm
	// DeadLetters: at least one failed batch (nil when the failure destination is a topic) is waiting in the on-failure queue to be replayed.
	DeadLetters awscloudwatch.Alarm
	// Errors: an invocation failed as a whole (crash, timeout, returned error). Record-level
	// failures are reported as batch item failures and do not count here.
	Errors awscloudwatch.Alarm
	// OtherStream: the function skipped records because its stream is not the current one
	// of the table's stream registry: a stack left in a Region the processing moved from,
	// or a stream never taken over (`denorm takeover`). It writes nothing meanwhile.
	OtherStream awscloudwatch.Alarm
}

func newAlarms(scope constructs.Construct, p settings, fn awslambda.Function, dlq awssqs.IQueue) Alarms {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	alarm := func(id string, metric awscloudwatch.IMetric, threshold float64, periods int, desc string) awscloudwatch.Alarm {
		a := awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(float64(periods)),
			DatapointsToAlarm:  jsii.Number(float64(periods)),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			// No data means no invocations and no queued failures: healthy, not unknown.
			TreatMissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			AlarmDescription: jsii.String(desc),
		})
		if len(p.AlarmActions) > 0 {
			a.AddAlarmAction(p.AlarmActions...)
		}
		if len(p.OKActions) > 0 {
			a.AddOkAction(p.OKActions...)
		}
		return a
	}
	alarms := Alarms{
		IteratorAge: alarm("IteratorAgeAlarm",
			fn.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: minute}),
			float64(p.iteratorAgeThreshold.Milliseconds()), 5,
			fmt.Sprintf("Denorm is more than %.0f s behind the table's stream for 5 minutes: copies and counters are stale.", p.iteratorAgeThreshold.Seconds())),
		Errors: alarm("ErrorsAlarm",
			fn.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute}),
			0, 1,
			"Denorm's stream processor failed whole invocations (crash, timeout or error); the batch is being retried and bisected."),
		OtherStream: alarm("OtherStreamAlarm",
			awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("Denorm"), MetricName: jsii.String("RecordsOfOtherStreams"),
				DimensionsMap: &map[string]*string{"Function": fn.FunctionName()}, Statistic: jsii.String("Sum"), Period: minute}),
			0, 1,
			"Denorm's stream processor skipped records and wrote nothing: its stream is not the current one of the table's stream registry (_dn#stream). Remove this stack if the processing moved to another Region, or run denorm takeover to move it here."),
	}
	if dlq != nil {
		alarms.DeadLetters = alarm("FailedBatchesAlarm",
			dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: minute}),
			0, 1,
			"Denorm gave up on stream records: their shard and sequence numbers are in the failure queue; fix the cause and replay them.")
	}
	return alarms
}
