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

// Alarms are the three signals that something needs a person: the processor falls behind,
// records were given up on, or the handler fails as a whole.
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
	}
	if dlq != nil {
		alarms.DeadLetters = alarm("FailedBatchesAlarm",
			dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: minute}),
			0, 1,
			"Denorm gave up on stream records: their shard and sequence numbers are in the failure queue; fix the cause and replay them.")
	}
	return alarms
}
