package denormcdk

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Statement ids of the processor's policy, one per reason the function needs access.
const (
	SidReadStream  = "ReadTableStream"
	SidWriteItems  = "ReadWriteTableItems"
	SidQuery       = "QueryTableAndIndexes"
	SidDeadLetters = "SendFailedBatchesToQueue"
	SidLogs        = "WriteOwnLogs"
	// SidTableKey is only there when the table is encrypted with a customer managed key.
	SidTableKey = "UseTableKey"
	// SidFailureKey is only there when the app's failure queue or topic has a KMS key.
	SidFailureKey = "UseFailureDestinationKey"
)

// FailureKeyActions are what sending to a KMS-encrypted SQS queue or SNS topic needs on its key.
var FailureKeyActions = []string{"kms:Decrypt", "kms:GenerateDataKey"}

// failureDestination is where the mapping sends the metadata of batches it gives up on: the
// construct's own queue or the app's queue or topic (Props.FailureQueue, FailureTopic).
type failureDestination struct {
	queue awssqs.IQueue
	topic awssns.ITopic
}

func (d failureDestination) arn() *string {
	if d.topic != nil {
		return d.topic.TopicArn()
	}
	return d.queue.QueueArn()
}

func (d failureDestination) action() string {
	if d.topic != nil {
		return "sns:Publish"
	}
	return "sqs:SendMessage"
}

func (d failureDestination) key() awskms.IKey {
	if d.topic != nil {
		return d.topic.MasterKey()
	}
	return d.queue.EncryptionMasterKey()
}

// StreamReadActions are what Lambda's event source mapping calls on the stream with the
// function's role; the function itself reads no stream. dynamodb:ListStreams is left out: it
// has no resource-level permissions (it would need Resource "*") and the mapping is given
// the stream ARN, so it never lists.
var StreamReadActions = []string{
	"dynamodb:DescribeStream",
	"dynamodb:GetShardIterator",
	"dynamodb:GetRecords",
}

// ItemActions are the item operations the executor makes on the table. TransactWriteItems
// and TransactGetItems (a split state read at one moment) have no IAM action of their own:
// DynamoDB authorizes each Get, Put, Update, Delete and ConditionCheck inside a transaction
// with the matching item action, so these cover them.
// There is no Scan, BatchWriteItem, PartiQL or table-level action.
var ItemActions = []string{
	"dynamodb:GetItem",
	"dynamodb:PutItem",
	"dynamodb:UpdateItem",
	"dynamodb:DeleteItem",
	"dynamodb:ConditionCheckItem",
}

// TableKeyActions are what the processor is granted on a customer managed KMS key that
// encrypts the table: the key actions of CDK's table grants (grantStreamRead,
// grantReadWriteData) without their wildcards: kms:ReEncrypt* is left out (re-encrypting
// under another key is not an item operation) and kms:GenerateDataKey* is spelled
// kms:GenerateDataKey. Tables encrypted with an AWS owned or AWS managed key need none.
var TableKeyActions = []string{
	"kms:Decrypt",
	"kms:DescribeKey",
	"kms:Encrypt",
	"kms:GenerateDataKey",
}

// grantProcessor gives the processor exactly what it uses, in one policy whose statements
// name the stream, the table, each queried index, the queue and the log group by ARN: no
// wildcard action and no Resource "*". It is an explicit Policy rather than Grant* calls
// because those grant more: Table.grantStreamRead adds dynamodb:ListStreams on "*",
// grantReadWriteData adds Scan, BatchWriteItem and "<table>/index/*", and a queue's
// grantSendMessages adds GetQueueAttributes and GetQueueUrl, and a KMS key's grants add
// kms:ReEncrypt* and kms:GenerateDataKey*.
func grantProcessor(scope constructs.Construct, role awsiam.IRole, t awsdynamodb.ITable, queried []string,
	extraReads []string, dest failureDestination, logs awslogs.LogGroup) awsiam.Policy {
	queryResources := []*string{t.TableArn()}
	seen := map[string]bool{}
	for _, name := range queried {
		if name == "" || name == "table" || seen[name] {
			continue
		}
		seen[name] = true
		queryResources = append(queryResources, jsii.String(*t.TableArn()+"/index/"+name))
	}
	itemActions := append(append([]string{}, ItemActions...), extraReads...)
	stmt := func(sid string, actions []string, resources ...*string) awsiam.PolicyStatement {
		return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String(sid),
			Effect:    awsiam.Effect_ALLOW,
			Actions:   jsii.Strings(actions...),
			Resources: &resources,
		})
	}
	statements := []awsiam.PolicyStatement{
		stmt(SidReadStream, StreamReadActions, t.TableStreamArn()),
		stmt(SidWriteItems, itemActions, t.TableArn()),
		// The base table too: fan-outs and pulls read item collections by partition.
		stmt(SidQuery, []string{"dynamodb:Query"}, queryResources...),
		// Lambda sends the failed batch's metadata with the function's role.
		stmt(SidDeadLetters, []string{dest.action()}, dest.arn()),
		// LogGroupArn ends in ":*", which names this group's log streams and nothing else.
		stmt(SidLogs, []string{"logs:CreateLogStream", "logs:PutLogEvents"}, logs.LogGroupArn()),
	}
	if key := t.EncryptionKey(); key != nil {
		// Reading the stream and the items decrypts with the table's key; writing encrypts.
		statements = append(statements, stmt(SidTableKey, TableKeyActions, key.KeyArn()))
	}
	if key := dest.key(); key != nil {
		// Sending to an encrypted queue or topic encrypts with its key.
		statements = append(statements, stmt(SidFailureKey, FailureKeyActions, key.KeyArn()))
	}
	return awsiam.NewPolicy(scope, jsii.String("ProcessorPolicy"), &awsiam.PolicyProps{
		Roles:      &[]awsiam.IRole{role},
		Statements: &statements,
	})
}
