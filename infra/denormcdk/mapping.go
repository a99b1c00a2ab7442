package denormcdk

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// newDeadLetterQueue is the mapping's on-failure destination. For a stream source Lambda
// sends the failed batch's metadata (stream ARN, shard id, first and last sequence number),
// not the records: enough to re-read them while the stream still holds them, which
// MaxRecordAge leaves time for. 14 days is SQS's longest retention, so an alarm raised on a
// Friday is still actionable.
func newDeadLetterQueue(scope constructs.Construct, dev bool) awssqs.Queue {
	q := awssqs.NewQueue(scope, jsii.String("FailedBatches"), &awssqs.QueueProps{
		// SQS-managed keys: encrypted at rest without a KMS key policy to grant, and Lambda's
		// SendMessage needs no kms:GenerateDataKey permission.
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		EnforceSSL:      jsii.Bool(true),
		RemovalPolicy:   removalPolicy(dev),
	})
	// cdk-nag's AwsSolutions-SQS3 wants every queue to have a dead-letter queue or to be
	// one, and recognizes only another queue's redrive policy as the latter.
	cdknag.NagSuppressions_AddResourceSuppressions(q, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-SQS3"),
		Reason: jsii.String("This queue is the dead-letter destination itself: the event source mapping's " +
			"on-failure destination for stream batches it gave up on. Nothing consumes it automatically, so " +
			"no message can fail to be processed and need a further dead-letter queue; an alarm fires on its first message."),
	}}, jsii.Bool(false))
	return q
}

// newMapping connects the table's stream to the function. It is the L1 resource because the
// L2 EventSourceMapping/DynamoEventSource grant permissions themselves (ListStreams on "*",
// queue attributes); here every permission comes from grantProcessor.
func newMapping(scope constructs.Construct, p settings, fn awslambda.IFunction, streamArn *string, filters []string,
	failureDestination *string) awslambda.CfnEventSourceMapping {
	props := &awslambda.CfnEventSourceMappingProps{
		FunctionName:   fn.FunctionName(),
		EventSourceArn: streamArn,
		// TRIM_HORIZON by default, from the oldest record the stream holds: a new deployment
		// (or a replacement of the mapping) must not skip writes made while it was being created.
		StartingPosition:               jsii.String(p.startingPosition),
		BatchSize:                      jsii.Number(float64(p.BatchSize)),
		MaximumBatchingWindowInSeconds: jsii.Number(p.maxBatchingWindow.Seconds()),
		// The handler reports the first record it could not apply; Lambda retries from there.
		FunctionResponseTypes: jsii.Strings("ReportBatchItemFailures"),
		// A batch that fails as a whole (timeout, crash) is split in halves until the poison
		// record is alone, so one bad record does not hold back the records around it.
		BisectBatchOnFunctionError: jsii.Bool(true),
		MaximumRetryAttempts:       jsii.Number(float64(p.RetryAttempts)),
		MaximumRecordAgeInSeconds:  jsii.Number(p.maxRecordAge.Seconds()),
		// One batch per shard at a time. The exactly-once watermarks ("applied up to sequence
		// number S" per source item or per partition) need the records of one partition key
		// applied in stream order by one invoker. Above 1, Lambda keeps order only per item
		// (partition and sort key): two items of one partition could be applied by concurrent
		// invocations, and a partition watermark advanced by one would skip the other's records.
		ParallelizationFactor: jsii.Number(1),
		DestinationConfig: &awslambda.CfnEventSourceMapping_DestinationConfigProperty{
			OnFailure: &awslambda.CfnEventSourceMapping_OnFailureProperty{Destination: failureDestination},
		},
	}
	if len(filters) > 0 {
		// Filtered-out records are dropped before invocation and cost nothing; an empty
		// pattern list would mean "no filtering", so the property is only set with patterns.
		props.FilterCriteria = filterCriteria(filters)
	}
	return awslambda.NewCfnEventSourceMapping(scope, jsii.String("StreamMapping"), props)
}
